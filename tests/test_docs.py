"""The docs stay honest: a short README that opens with the two set-up commands, links that lead somewhere,
and only `triton-mme` sub-commands and `make` targets that exist."""

from __future__ import annotations

import argparse
import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

from triton_mme.cli import parser

REPO_ROOT = Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
MAX_README_LINES = 250
SETUP_COMMANDS = ["make synth", "make test"]
# Pages written in parallel work: links to them are allowed before they land, and checked once they do.
PENDING_PAGES = {
    "docs/first-deploy.md",
    "docs/platform.md",
    "docs/settings-platform.md",
    "docs/input-limits.md",
    "docs/local-triton-isolation.md",
}

FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
TRITON_MME = re.compile(r"(?:^|[\s`(/])(?:triton-mme|python -m triton_mme)[ \t]+([a-z][a-z0-9-]*)")
MAKE = re.compile(r"(?:^|[\s`(;&|])make[ \t]+([^\n`#]*)")


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def page_ids() -> list[str]:
    return [str(page.relative_to(REPO_ROOT)) for page in pages()]


def without_code(text: str) -> str:
    """The prose of a page: fenced blocks and inline code removed (links inside code are not links)."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def code_of(text: str) -> list[str]:
    """Every fenced block and inline code span of a page."""
    blocks = [match.group(2) for match in FENCE.finditer(text)]
    spans = [match.group(2) for match in INLINE_CODE.finditer(FENCE.sub("", text))]
    return blocks + spans


def project_files() -> set[str]:
    """Files git tracks or would track (untracked but not ignored), and every folder above them."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: what is on disk
        listed = [str(p.relative_to(REPO_ROOT)) for p in REPO_ROOT.rglob("*") if p.is_file()]
    files = {name for name in listed if name and (REPO_ROOT / name).exists()}
    folders = {str(parent) for name in files for parent in Path(name).parents if str(parent) != "."}
    return files | folders


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        anchor, count = github_anchor(heading), 0
        while (anchor if count == 0 else f"{anchor}-{count}") in found:
            count += 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(without_code(page.read_text(encoding="utf-8")))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def sub_commands() -> set[str]:
    for action in parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    raise AssertionError("triton-mme has no sub-commands")


def make_targets() -> set[str]:
    text = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][a-z0-9-]*)[ \t]*:(?!=)", text, re.MULTILINE))


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; keep it to {MAX_README_LINES}"


def test_the_readme_opens_with_what_it_is_then_the_two_setup_commands() -> None:
    text = README.read_text(encoding="utf-8")
    first = FENCE.search(text)
    assert first is not None, "README.md has no code block"
    commands = [line.split("#", 1)[0].strip() for line in first.group(2).splitlines()]
    assert [c for c in commands if c] == SETUP_COMMANDS
    intro = without_code(text[: first.start()])
    prose = [line for line in intro.splitlines() if line.strip() and not line.startswith("#")]
    assert prose, "README.md should say what the project is before the set-up commands"
    assert len(text[: first.start()].splitlines()) <= 15, "the set-up commands belong near the top"


def test_the_readme_pastes_no_benchmark_results() -> None:
    text = README.read_text(encoding="utf-8")
    assert "**pass**" not in text and "**miss**" not in text
    assert "benchmarks/results/20" not in text, "link docs/benchmarks.md, which links the latest results"


@pytest.mark.parametrize("page", pages(), ids=page_ids())
def test_every_relative_link_leads_to_a_project_file(page: Path) -> None:
    known = project_files()
    broken = []
    for target in relative_links(page):
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        relative = resolved.relative_to(REPO_ROOT).as_posix() if resolved.is_relative_to(REPO_ROOT) else path
        if relative in PENDING_PAGES and not resolved.exists():
            continue
        if relative not in known and resolved != page:
            broken.append(f"{target} (no such file in the project)")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target} (no heading '#{fragment}' in {relative})")
    assert not broken, f"{page.relative_to(REPO_ROOT)}: " + "; ".join(broken)


def test_the_readme_links_every_docs_page() -> None:
    linked = {
        (README.parent / target.partition("#")[0]).resolve().relative_to(REPO_ROOT).as_posix()
        for target in relative_links(README)
        if target.partition("#")[0]
    }
    pages_here = {page.relative_to(REPO_ROOT).as_posix() for page in DOCS.glob("*.md")}
    missing = sorted((pages_here | PENDING_PAGES) - linked)
    assert not missing, f"README.md does not link {missing}"


@pytest.mark.parametrize("page", pages(), ids=page_ids())
def test_every_named_sub_command_exists(page: Path) -> None:
    known = sub_commands()
    named = {word for code in code_of(page.read_text(encoding="utf-8")) for word in TRITON_MME.findall(code)}
    assert named <= known, f"{page.relative_to(REPO_ROOT)} names unknown sub-commands {sorted(named - known)}"


@pytest.mark.parametrize("page", pages(), ids=page_ids())
def test_every_named_make_target_exists(page: Path) -> None:
    known = make_targets()
    named = set()
    for code in code_of(page.read_text(encoding="utf-8")):
        for arguments in MAKE.findall(code):
            words = [w for w in arguments.split() if not w.startswith("-") and "=" not in w]
            named.update(w.strip("`'\",.;:)") for w in words[:1])
    named.discard("")
    assert named <= known, f"{page.relative_to(REPO_ROOT)} names unknown make targets {sorted(named - known)}"


def test_the_checks_see_what_they_check() -> None:
    """A control: the parsers find the commands, targets and links the README is known to hold."""
    text = README.read_text(encoding="utf-8")
    assert {"build", "invoke", "serve-local", "upload"} <= {
        word for code in code_of(text) for word in TRITON_MME.findall(code)
    }
    assert {"synth", "test", "deploy", "snapshot-update"} <= make_targets()
    assert "docs/architecture.md" in relative_links(README)
    assert github_anchor("Monitoring: dashboard and alarms") == "monitoring-dashboard-and-alarms"
    assert github_anchor("Reviewing a change offline: `make diff` against a saved template") == (
        "reviewing-a-change-offline-make-diff-against-a-saved-template"
    )

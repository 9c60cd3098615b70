"""checkov on the synthesized templates: every finding fixed, or skipped with its reason where its resource is
defined (triton_mme_cdk/constructs/scanners/checkov.py).

`python -m benchmarks.checkov_scan --checkov PATH [TEMPLATE ...] [--out PREFIX]` (default: cdk.out's
templates, results under benchmarks/results/checkov.{md,json}); `make scan` runs it with the checkov that
requirements-scan.txt pins, installed in .venv-scan (checkov pins boto3 and packaging below the project's).

It fails (exit status 1) on a failed check; on a skip without a reason, or of a check the project's table
(CHECKS) does not list, or lists under another name than checkov's; and on a skip in a template that checkov
did not apply, i.e. one that matches nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.context import REPO_ROOT
from triton_mme_cdk.constructs.scanners.checkov import CHECKS

DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "checkov"
MIN_REASON = 30  # characters, as for the cdk-nag acknowledgments (tests/infra/test_app.py)
Skip = tuple[str, str, str]  # template file name, logical id, check id


def template_skips(template_path: Path) -> dict[Skip, str]:
    """Every checkov skip a template's resources carry in their Metadata, with its comment."""
    resources = json.loads(template_path.read_text(encoding="utf-8")).get("Resources", {})
    return {
        (template_path.name, logical_id, skip.get("id", "")): str(skip.get("comment", ""))
        for logical_id, resource in resources.items()
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    }


def skip_problems(resources: dict[str, Any]) -> list[str]:
    """What is wrong with the skips of a template's `resources`: a check the table does not list, one that
    does not check that resource type, the same check twice, a reason shorter than MIN_REASON."""
    found = []
    for logical_id, resource in resources.items():
        skips = resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
        ids = [skip.get("id") for skip in skips]
        if len(ids) != len(set(ids)):
            found.append(f"{logical_id}: a check skipped twice: {ids}")
        for skip in skips:
            check, reason = skip.get("id"), str(skip.get("comment", "")).strip()
            if check not in CHECKS:
                found.append(
                    f"{logical_id}: {check} is not a check of "
                    "triton_mme_cdk.constructs.scanners.checkov.CHECKS"
                )
            elif resource["Type"] not in CHECKS[check].resource_types:
                found.append(f"{logical_id}: {check} does not check a {resource['Type']}")
            if len(reason) < MIN_REASON:
                found.append(f"{logical_id}: {check} skipped without a reason ({reason!r})")
    return found


def run_checkov(checkov: str, templates: list[Path]) -> dict[str, Any]:
    """checkov's JSON report of the CloudFormation checks on `templates`, offline (--skip-download)."""
    command = [checkov, "--framework", "cloudformation", "--compact", "--skip-download", "-o", "json"]
    for template in templates:
        command += ["-f", str(template)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # 1: some check failed, judged below
        raise SystemExit(f"error: checkov exited {done.returncode}: {done.stderr.strip()[-500:]}")
    report = json.loads(done.stdout)
    return report[0] if isinstance(report, list) else report


def problems(report: dict[str, Any], skips: dict[Skip, str]) -> list[str]:
    """Every failed check, every applied skip of a check the table lists otherwise, and every skip in the
    templates that checkov did not apply."""
    results = report.get("results", {})
    found = [
        f"failed: {c['check_id']} ({c['check_name']}) on {c['resource']} in {Path(c['file_path']).name}"
        for c in results.get("failed_checks", [])
    ]
    applied = set()
    for check in results.get("skipped_checks", []):
        logical_id = check["resource"].split(".", 1)[1]
        applied.add((Path(check["file_path"]).name, logical_id, check["check_id"]))
        known = CHECKS.get(check["check_id"])
        if known is not None and known.name != check["check_name"]:
            found.append(
                f"{check['check_id']} is {check['check_name']!r} to checkov, {known.name!r} in CHECKS"
            )
    found += [
        f"skip matches nothing: {check} on {logical_id} in {template}"
        for template, logical_id, check in sorted(set(skips) - applied)
    ]
    return found


def summary(report: dict[str, Any], skips: dict[Skip, str], templates: Iterable[Path]) -> dict[str, Any]:
    counts = report.get("summary", {})
    skipped = Counter(c["check_id"] for c in report.get("results", {}).get("skipped_checks", []))
    return {
        "checkov_version": counts.get("checkov_version"),
        "templates": sorted(path.name for path in templates),
        "passed": counts.get("passed", 0),
        "failed": counts.get("failed", 0),
        "skipped": counts.get("skipped", 0),
        "skipped_by_check": dict(sorted(skipped.items())),
        "problems": problems(report, skips),
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# checkov on the synthesized templates",
        "",
        f"checkov {result['checkov_version']}, `make scan` (`python -m benchmarks.checkov_scan`) on "
        + ", ".join(f"`{name}`" for name in result["templates"])
        + f": {result['passed']} passed, {result['failed']} failed, {result['skipped']} skipped with "
        "their reasons (in the template's Metadata, added where each resource is defined).",
        "",
        "| Check | Skipped | checkov's name |",
        "|---|---|---|",
    ]
    lines += [
        f"| {check} | {count} | {CHECKS[check].name if check in CHECKS else '?'} |"
        for check, count in result["skipped_by_check"].items()
    ]
    lines += ["", "Problems: " + ("none" if not result["problems"] else "")]
    lines += [f"- {problem}" for problem in result["problems"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.checkov_scan", description=__doc__)
    parser.add_argument("templates", nargs="*", type=Path, help="default: cdk.out/*.template.json")
    parser.add_argument("--checkov", required=True, help="the checkov executable")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results as PREFIX.json and PREFIX.md")
    args = parser.parse_args(argv)
    templates = args.templates or sorted((REPO_ROOT / "cdk.out").glob("*.template.json"))
    if not templates:
        print("error: no template to scan: run make synth first", file=sys.stderr)
        return 1
    skips: dict[Skip, str] = {}
    for template in templates:
        skips.update(template_skips(template))
        resources = json.loads(template.read_text(encoding="utf-8")).get("Resources", {})
        skips_wrong = skip_problems(resources)
        if skips_wrong:
            print("\n".join(f"error: {template.name}: {p}" for p in skips_wrong), file=sys.stderr)
            return 1
    result = summary(run_checkov(args.checkov, templates), skips, templates)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The fresh-clone benchmark times the README's two commands in a clone and reads pytest's own figures."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks.fresh_clone import main, pytest_figures

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")

# synth fails unless uv's cache is set and empty: the clone installs as a new machine would.
MAKEFILE = """synth:
\t@test -n "$$UV_CACHE_DIR" && test -z "$$(ls -A "$$UV_CACHE_DIR" 2>/dev/null)"
\t@touch synthesized
test:
\t@test -f synthesized
\t@echo "=========== 3 passed, 1 skipped, 2 warnings in 0.42s ==========="
unit:
\t@test -f synthesized
\t@echo "=========== 3 passed, 1 skipped in 0.21s ==========="
"""


def _repo(path: Path, makefile: str) -> Path:
    path.mkdir()
    (path / "Makefile").write_text(makefile)
    for command in (["init", "-q"], ["add", "Makefile"], ["commit", "-qm", "a Makefile"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *command], cwd=path, check=True
        )
    return path


def test_pytest_figures_come_from_the_last_summary_line() -> None:
    output = "5 passed in 1.00s\n...\n==== 1422 passed, 6 skipped, 3 warnings in 172.31s (0:02:52) ====\n"
    assert pytest_figures(output) == (172.31, {"passed": 1422, "skipped": 6, "warnings": 3})
    assert pytest_figures("no summary here") == (None, {})


def test_both_commands_run_in_a_clone_in_order_and_are_recorded(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", MAKEFILE)
    out = tmp_path / "results" / "fresh-clone"

    assert main(["--repo", str(repo), "--out", str(out)]) == 0

    recorded = json.loads(out.with_suffix(".json").read_text())
    assert [run["command"] for run in recorded["runs"]] == ["make synth", "make test"]
    assert all(run["returncode"] == 0 and run["wall_seconds"] >= 0 for run in recorded["runs"])
    assert recorded["pytest_seconds"] == 0.42 and recorded["pytest_counts"]["passed"] == 3
    assert recorded["passed"] is True
    assert not (repo / "synthesized").exists()  # the clone, not the checkout, ran the commands
    assert "| `make test` | 0 |" in out.with_suffix(".md").read_text()


def test_a_failed_synth_stops_the_run_and_fails_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", "synth:\n\t@exit 3\ntest:\n\t@echo never\n")
    out = tmp_path / "fresh-clone"

    assert main(["--repo", str(repo), "--out", str(out)]) == 1

    recorded = json.loads(out.with_suffix(".json").read_text())
    assert [(run["command"], run["returncode"]) for run in recorded["runs"]] == [("make synth", 2)]
    assert recorded["passed"] is False and recorded["pytest_seconds"] is None
    assert "Error 3" in out.with_suffix(".synth.log").read_text()  # make's own line about the failed recipe


def test_each_run_overwrites_the_result_and_a_pass_drops_an_earlier_failure_log(tmp_path: Path) -> None:
    out = tmp_path / "fresh-clone"
    failing = _repo(tmp_path / "failing", "synth:\n\t@exit 3\ntest:\n\t@echo never\n")
    assert main(["--repo", str(failing), "--out", str(out)]) == 1
    assert out.with_suffix(".synth.log").is_file()

    assert main(["--repo", str(_repo(tmp_path / "passing", MAKEFILE)), "--out", str(out)]) == 0

    written = sorted(path.name for path in tmp_path.glob("fresh-clone*"))
    assert written == ["fresh-clone.json", "fresh-clone.md"]
    assert json.loads(out.with_suffix(".json").read_text())["passed"] is True


def test_the_rerun_is_pytest_alone_in_the_same_clone_and_not_in_the_total(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", MAKEFILE)
    out = tmp_path / "fresh-clone"

    assert main(["--repo", str(repo), "--out", str(out), "--rerun-unit"]) == 0

    recorded = json.loads(out.with_suffix(".json").read_text())
    assert recorded["rerun"]["command"] == "make unit" and recorded["rerun"]["returncode"] == 0
    assert recorded["rerun_pytest_seconds"] == 0.21 and recorded["pytest_seconds"] == 0.42
    assert recorded["total_seconds"] == round(sum(run["wall_seconds"] for run in recorded["runs"]), 1)
    assert "`make unit` again in the same clone" in out.with_suffix(".md").read_text()


def test_the_test_target_unit_times_pytest_alone_after_synth(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", MAKEFILE)
    out = tmp_path / "fresh-clone"

    assert main(["--repo", str(repo), "--out", str(out), "--test-target", "unit"]) == 0

    recorded = json.loads(out.with_suffix(".json").read_text())
    assert [run["command"] for run in recorded["runs"]] == ["make synth", "make unit"]
    assert recorded["pytest_seconds"] == 0.21 and recorded["pytest_counts"] == {"passed": 3, "skipped": 1}
    text = out.with_suffix(".md").read_text()
    assert text.startswith("# A fresh clone's `make synth` + `make unit`")
    assert "pytest inside `make unit`: 0 min 00.2 s" in text


def test_a_worker_count_from_the_environment_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path / "repo", MAKEFILE)
    out = tmp_path / "fresh-clone"
    monkeypatch.setenv("PYTEST_WORKERS", "2")

    assert main(["--repo", str(repo), "--out", str(out), "--test-target", "unit"]) == 0

    assert json.loads(out.with_suffix(".json").read_text())["pytest_workers"] == 2
    assert "Run with `PYTEST_WORKERS=2` in the environment" in out.with_suffix(".md").read_text()

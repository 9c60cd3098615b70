"""The results files: JSON with a unit on every figure, Markdown with pass/miss, a real PNG."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.report import result_stem, write_report
from benchmarks.results import Report, Section
from benchmarks.timing import Samples

MACHINE = {
    "cpu_model": "Test CPU 9000",
    "usable_cores": 2,
    "logical_cores": 2,
    "memory_gib": 8.0,
    "gpu": None,
}


def sample_report() -> Report:
    ran = Section(name="cold", title="1. Cold start")
    ran.add("notebook", "Notebook-style", 2.0, "s")
    ran.add_samples("project", "Project", Samples([0.5, 0.7, 0.6]), unit="s")
    ran.ratio("ratio", "Project / notebook", "project", "notebook")
    ran.target("Cold start vs notebook", "ratio", "<=", 0.7)
    ran.target("Cold start vs notebook (strict)", "ratio", "<=", 0.1)
    ran.chart = ["notebook", "project"]
    ran.notes.append("a note")
    not_run = Section(name="gpu", title="7. GPU", status="not run: no GPU")
    return Report(
        date="2030-01-02",
        machine=MACHINE,
        versions={"onnxruntime": "1.0"},
        command="python -m benchmarks --quick",
        quick=True,
        sections=[ran, not_run],
        duration_s=3.0,
    )


@pytest.fixture
def written(tmp_path: Path) -> dict[str, Path]:
    paths = write_report(sample_report(), tmp_path / "results")
    return {path.suffix: path for path in paths}


def test_files_are_named_by_date_and_machine(written: dict[str, Path]) -> None:
    assert result_stem(sample_report()) == "2030-01-02-test-9000-2c"
    assert {path.name for path in written.values()} == {
        "2030-01-02-test-9000-2c.json",
        "2030-01-02-test-9000-2c.md",
        "2030-01-02-test-9000-2c.png",
    }


def test_json_carries_units_machine_versions_command_and_same_run_ratios(written: dict[str, Path]) -> None:
    data = json.loads(written[".json"].read_text())
    assert data["machine"]["cpu_model"] == "Test CPU 9000"
    assert data["versions"] == {"onnxruntime": "1.0"}
    assert data["command"] == "python -m benchmarks --quick"
    cold, gpu = data["sections"]
    assert all(figure["unit"] for figure in cold["figures"])
    figures = {figure["key"]: figure for figure in cold["figures"]}
    (ratio,) = cold["ratios"]
    assert ratio["value"] == pytest.approx(figures["project"]["value"] / figures["notebook"]["value"])
    assert ratio["unit"] == "x"
    assert [target["passed"] for target in cold["targets"]] == [True, False]
    assert figures["project"]["count"] == 3
    assert gpu["status"] == "not run: no GPU"


def test_markdown_has_targets_with_pass_and_miss_and_the_not_run_section(written: dict[str, Path]) -> None:
    text = written[".md"].read_text()
    assert "| Cold start vs notebook | <= 0.700x | 0.300x | **pass** |" in text
    assert "| Cold start vs notebook (strict) | <= 0.100x | 0.300x | **miss** |" in text
    assert "_not run: no GPU_" in text
    assert "| Project | 0.600 s | p50, n=3 |" in text
    assert "![Benchmark chart](2030-01-02-test-9000-2c.png)" in text
    assert "quick mode" in text


def test_chart_is_a_png(written: dict[str, Path]) -> None:
    data = written[".png"].read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 5000


def test_a_report_without_chartable_sections_still_writes_a_chart(tmp_path: Path) -> None:
    report = sample_report()
    report.sections = report.sections[1:]
    paths = write_report(report, tmp_path)
    assert paths[2].read_bytes().startswith(b"\x89PNG")

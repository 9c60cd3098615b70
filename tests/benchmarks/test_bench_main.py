"""The command line: selected benchmarks only, results files written, GPU section never silently absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from benchmarks.__main__ import main
from benchmarks.context import RunContext
from benchmarks.results import Section
from benchmarks.suite import BENCHMARKS, Benchmark, run_benchmark


def test_quick_payloads_and_gpu_write_all_three_files(tmp_path: Path) -> None:
    status = main(["--quick", "--only", "payloads", "gpu", "--out", str(tmp_path)])
    assert status == 0
    (json_path,) = tmp_path.glob("*.json")
    assert json_path.with_suffix(".md").is_file()
    assert json_path.with_suffix(".png").is_file()
    data = json.loads(json_path.read_text())
    assert data["quick"] is True
    assert {"load_average_1min_before", "load_average_1min_after", "cpu_model"} <= set(data["machine"])
    assert data["command"] == "python -m benchmarks --quick --only payloads gpu --out " + str(tmp_path)
    sections = {section["name"]: section for section in data["sections"]}
    assert set(sections) == {"payloads", "gpu"}
    assert sections["payloads"]["status"] == "ran"
    if not torch.cuda.is_available():
        assert sections["gpu"]["status"] == "not run: no GPU"


def test_unknown_benchmark_name_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--only", "nonsense", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_failing_benchmark_is_recorded_with_its_reason(tmp_path: Path) -> None:
    def broken(ctx: RunContext, section: Section) -> None:
        section.add("partial", "Partial", 1.0, "s")
        raise RuntimeError("the build API is missing\nsecond line")

    section = run_benchmark(Benchmark("broken", "Broken", broken), RunContext(quick=True, scratch=tmp_path))
    assert section.status == "failed: RuntimeError: the build API is missing"


def test_every_issue_item_has_a_benchmark() -> None:
    assert [b.name for b in BENCHMARKS] == [
        "cold_start",
        "resnet50",
        "text",
        "payloads",
        "synth",
        "build",
        "gpu",
        "client_invoke",
        "serving_check",
        "serving_check_gpu",
        "plan",
        "loadgen",
        "hit_rate",
        "log_parser",
        "growth",
        "placement",
    ]


def test_the_product_command_line_has_no_benchmark_command() -> None:
    """The suite runs from the checkout (`python -m benchmarks`); the installed command never imports it."""
    from triton_mme.cli import command_modules

    modules = [module.__name__ for module in command_modules()]
    assert modules, "the command line found no command modules at all"
    assert all(name.startswith("triton_mme.") for name in modules), modules

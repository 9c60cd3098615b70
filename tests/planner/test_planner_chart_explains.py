"""Charts that explain themselves (issue 42, case 8): a message in the picture when nothing meets the targets,
instances (not dollars) for a local Triton, no matplotlib warning on the terminal, a chart for --compare."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
from planner_support import manifest_of, write_manifest
from test_planner_cli import FAST, TRAFFIC, _load_test

from triton_mme.cli import main

# Set to a folder to keep the pictures for a look (TRITON_MME_KEEP_CHARTS=/tmp/charts).
KEEP = os.environ.get("TRITON_MME_KEEP_CHARTS")


def chart_path(tmp_path: Path, name: str) -> Path:
    return Path(KEEP) / name if KEEP else tmp_path / name


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The words each saved figure holds, by file name (a PNG cannot be searched for text)."""
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    words: dict[str, str] = {}
    save = Figure.savefig

    def recording(self: Figure, path: object, *args: object, **kwargs: object) -> None:
        words[Path(str(path)).name] = " | ".join(t.get_text() for t in self.findobj(Text) if t.get_text())
        save(self, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", recording)
    return words


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    manifest = write_manifest(tmp_path / "build", manifest_of(40))
    traffic = tmp_path / "traffic.yaml"
    traffic.write_text(TRAFFIC + "targets:\n  min_cache_hit_rate: 0.9\n")
    return manifest, traffic


def plan_chart(argv: list[str], path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning matplotlib let through fails the test
        assert main([*argv, "--chart", str(path), *FAST]) == 0
    captured = capsys.readouterr()
    assert "Warning" not in captured.err and "warn" not in captured.err.lower()
    assert path.read_bytes().startswith(b"\x89PNG")
    return captured.out


def test_no_type_meeting_the_targets_says_why_in_the_picture(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], drawn: dict[str, str]
) -> None:
    manifest, traffic = files
    traffic.write_text(TRAFFIC + "targets:\n  min_cache_hit_rate: 0.99999\n  p99_latency_ms: 1\n")
    path = chart_path(tmp_path, "no-type.png")
    argv = [
        "plan",
        "--traffic",
        str(traffic),
        "--manifest",
        str(manifest),
        "--instance-types",
        "ml.g4dn.xlarge",
    ]
    printed = plan_chart(argv, path, capsys)
    assert "no instance type meets the targets" in printed
    assert "no instance type meets the targets" in drawn[path.name]


def test_a_local_budget_is_charted_in_instances_without_a_warning(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], drawn: dict[str, str]
) -> None:
    manifest, traffic = files
    path = chart_path(tmp_path, "local.png")
    plan_chart(
        ["plan", "--traffic", str(traffic), "--manifest", str(manifest), "--model-budget", "14"], path, capsys
    )
    assert "instances (local Triton: no price)" in drawn[path.name]
    assert "USD" not in drawn[path.name]


def test_compare_with_a_chart_writes_one(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], drawn: dict[str, str]
) -> None:
    manifest, _ = files
    report = tmp_path / "loadtest.json"
    report.write_text(_load_test(manifest, 0.5).model_dump_json())
    plan_chart(["plan", "--compare", str(report)], chart_path(tmp_path, "compare.png"), capsys)
    assert "predicted" in drawn["compare.png"] and "measured" in drawn["compare.png"]

"""The invoke benchmark runs both clients for real against the loopback stand-in and agrees on the answer."""

from __future__ import annotations

from pathlib import Path

from benchmarks.client_invoke import NAME, TITLE, run
from benchmarks.context import RunContext
from benchmarks.results import Section


def test_quick_run_measures_both_clients_and_checks_them_against_the_targets(tmp_path: Path) -> None:
    section = Section(name=NAME, title=TITLE)

    run(RunContext(quick=True, scratch=tmp_path), section)

    keys = {figure.key for figure in section.figures}
    assert {"project.time", "plain.time", "project.peak", "plain.peak"} <= keys
    assert all(figure.value > 0 and figure.count == 2 for figure in section.figures)
    assert {ratio.key for ratio in section.ratios} == {"time", "peak"}
    assert [target.measured_key for target in section.targets] == ["time", "project.peak"]
    # Both clients printed the same five labels (the benchmark raises otherwise).
    assert section.settings["Top 5 (both)"].startswith("tabby, tiger cat")

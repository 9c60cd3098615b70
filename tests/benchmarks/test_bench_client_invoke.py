"""The invoke benchmark runs both clients for real against the loopback stand-in and agrees on the answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.client_invoke import NAME, TITLE, run
from benchmarks.context import RunContext
from benchmarks.results import Section


@pytest.mark.slow
def test_quick_run_measures_both_clients_and_checks_them_against_the_targets(tmp_path: Path) -> None:
    section = Section(name=NAME, title=TITLE)

    run(RunContext(quick=True, scratch=tmp_path), section)

    figures = {figure.key: figure for figure in section.figures}
    processes = {"project.time", "plain.time", "project.peak", "plain.peak"}
    assert processes <= set(figures)
    assert all(figures[key].value > 0 and figures[key].count == 2 for key in processes)
    # Caller metrics: three ways of sending, 3 quick rounds each, and the cost of recording alone.
    assert all(figures[f"metrics.{way}"].count == 3 for way in ("bare", "off", "on"))
    assert 0 < figures["metrics.record"].value < figures["metrics.off"].value
    assert {ratio.key for ratio in section.ratios} == {
        "time",
        "peak",
        "metrics.on_off",
        "metrics.off_bare",
        "metrics.cost",
    }
    assert sorted(target.measured_key for target in section.targets) == sorted(
        ["time", "project.peak", "metrics.cost", "metrics.off_bare"]
    )
    # Both clients printed the same five labels (the benchmark raises otherwise).
    assert section.settings["Top 5 (both)"].startswith("tabby, tiger cat")

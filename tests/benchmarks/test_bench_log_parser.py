"""The log parser benchmark parses its synthetic lines and counts every load and eviction (no timing)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context import RunContext
from benchmarks.log_parser import LOADS_PER_S, NAME, TITLE, minute_of_lines, run
from benchmarks.results import Section
from triton_mme.observability.triton_log import Kind, LogEvent, read_events


def test_a_minute_holds_100_loads_and_evictions_a_second_in_triton_s_shapes() -> None:
    events = [e for e in read_events(minute_of_lines(3)) if isinstance(e, LogEvent)]
    loads = sum(e.kind is Kind.LOADED for e in events)
    evictions = sum(e.kind is Kind.UNLOADED for e in events)
    assert loads == evictions == 60 * LOADS_PER_S
    assert all(e.clock.startswith("1201 00:03:") for e in events)


def test_quick_run_records_lines_rate_and_target(tmp_path: Path) -> None:
    section = Section(name=NAME, title=TITLE)
    run(RunContext(quick=True, scratch=tmp_path), section)
    figures = {figure.key: figure for figure in section.figures}
    assert figures["lines"].value == 5 * 60 * 900
    assert figures["rate"].value > 0
    assert [target.measured_key for target in section.targets] == ["rate"]

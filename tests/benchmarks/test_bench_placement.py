"""Benchmark 16: the placement layouts' cost and cold starts over both catalogs, from the planner alone."""

from __future__ import annotations

from pathlib import Path

from benchmarks import placement
from benchmarks.context import RunContext
from benchmarks.results import Section
from benchmarks.suite import BENCHMARKS


def test_each_catalog_gets_all_three_layouts_with_cost_and_cold_starts(tmp_path: Path) -> None:
    section = Section(placement.NAME, placement.TITLE)
    placement.run(RunContext(quick=True, scratch=tmp_path), section)
    for catalog in ("default", f"tiny-{placement.TINY_MODELS}"):
        for kind in ("all-mme", "hybrid", "all-dedicated"):
            assert section.figure(f"{catalog}_{kind}_usd").value > 0
            assert 0 <= section.figure(f"{catalog}_{kind}_cold").value <= 100
        # Every model on its own copies is never cheaper than sharing, and never colder.
        dedicated = section.figure(f"{catalog}_all-dedicated_usd").value
        assert dedicated >= section.figure(f"{catalog}_all-mme_usd").value
        assert section.figure(f"{catalog}_all-dedicated_cold").value == 0
    assert section.notes[0].startswith("default catalog (3 archives) on ml.")
    # Where the multi-model endpoint may not grow, the hybrid meets the target it misses.
    assert section.figure(f"{placement.CAPPED}_all-mme_cold").value > 1
    assert section.figure(f"{placement.CAPPED}_hybrid_cold").value <= 1
    assert "recommended hybrid" in section.notes[2]
    assert placement.NAME in {b.name for b in BENCHMARKS}

"""Benchmark 16: the placement layouts' cost and cold starts over both catalogs, from the planner alone."""

from __future__ import annotations

from pathlib import Path

from tiny_archives import placed_copy

from benchmarks import placement
from benchmarks.context import RunContext
from benchmarks.placement_local import record_figures, round_trip
from benchmarks.results import Section
from benchmarks.suite import BENCHMARKS
from triton_mme.core.manifest import Manifest
from triton_mme.core.naming import LOCAL_COMPONENT_ENDPOINT, inference_component_name


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


def test_the_local_round_trip_answers_each_placement_on_its_own_route(
    built: tuple[Path, Manifest], tmp_path: Path, isolated: None
) -> None:
    source, manifest = built
    models = placed_copy(source, tmp_path / "models")

    figures = {f.name: f for f in round_trip(models, warm_calls=2)}

    assert set(figures) == {f"{r.name}/{r.format}" for r in manifest.archives if r.format == "onnx"}
    component = inference_component_name(LOCAL_COMPONENT_ENDPOINT, "tiny-cnn")
    assert figures["tiny-cnn/onnx"].route == f"inference component {component}"
    assert figures["tiny-cnn/onnx"].dedicated
    others = [f for name, f in figures.items() if name != "tiny-cnn/onnx"]
    assert others and all(f.route.startswith("TargetModel ") and not f.dedicated for f in others)
    assert all(f.first_cache == "miss" and len(f.warm_ms) == 2 for f in figures.values())
    section = Section(placement.NAME, placement.TITLE)
    record_figures(section, list(figures.values()))
    assert section.figure("local_warm_ms.tiny-cnn_onnx").value > 0

"""docs/deploy.md's picture of the build engine: `python -m benchmarks.build_engine_chart` draws the
synthesized definition, every state once, each edge downwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synth_support import Synthesized

from benchmarks.build_engine_chart import draw, engine_definition, layers, main


def test_the_chart_draws_every_state_of_the_synthesized_machine(
    default_synth: Synthesized, tmp_path: Path
) -> None:
    definition = engine_definition(default_synth.template.to_json())
    assert {"BuiltBefore", "ModelBuild", "ServingCheck", "SignalSuccess", "Failed"} <= set(
        definition["States"]
    )
    depth = layers(definition)
    assert set(depth) == set(definition["States"])
    for name, state in definition["States"].items():  # each Next and Catch points down the page
        for target in [state.get("Next")] + [c["Next"] for c in state.get("Catch", [])]:
            assert target is None or depth[target] > depth[name]
    draw(definition, tmp_path / "engine.png")
    assert (tmp_path / "engine.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_a_template_it_says_what_to_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing.json"), "--out", str(tmp_path / "x.png")]) == 1
    assert capsys.readouterr().out.strip() == (
        f"error: {tmp_path / 'missing.json'}: no template; allowed: a synthesized stack template (make synth)"
    )
    assert not (tmp_path / "x.png").exists()


def test_the_template_file_round_trips(default_synth: Synthesized, tmp_path: Path) -> None:
    template = tmp_path / "stack.template.json"
    template.write_text(json.dumps(default_synth.template.to_json()))
    assert main([str(template), "--out", str(tmp_path / "engine.png")]) == 0
    assert (tmp_path / "engine.png").stat().st_size > 10_000

"""`triton-mme plan --json` writes the same keys and values as before its document became pydantic models:
one fixed input (measured and estimated archives, a given price and the table's, a candidate that misses its
targets, one left out, one endpoint per model) against the JSON recorded for it, floats to 12 digits
(tests/planner/data/plan_recorded.json; re-record with `RECORD_PLAN_JSON=1` only after an intended change)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from planner_support import manifest_of, serving_report_of, write_manifest

from triton_mme.cli import main
from triton_mme.planner import plan_document
from triton_mme.sizing.assumptions import RESNET50_FP32_WEIGHT_BYTES

RECORDED = Path(__file__).parent / "data" / "plan_recorded.json"
TRAFFIC = (
    "duration_s: 3600\nservice_ms: 4\nseed: 7\nzipf:\n  total_rate_per_s: 30\n  exponent: 0.9\n"
    "targets:\n  min_cache_hit_rate: 0.95\n  p99_latency_ms: 2000\n"
)


SIZE = 10 * RESNET50_FP32_WEIGHT_BYTES  # about 15 fit a T4: the hit-rate target decides the counts


def _plan_json(tmp_path: Path) -> dict[str, object]:
    manifest = write_manifest(tmp_path / "build", manifest_of(40, SIZE))
    report = serving_report_of(manifest_of(40, SIZE))
    manifest.with_name("serving-report.json").write_text(report.model_dump_json())
    traffic = tmp_path / "traffic.yaml"
    traffic.write_text(TRAFFIC)
    out = tmp_path / "plan.json"
    types = ["ml.g4dn.xlarge", "ml.g5.xlarge", "ml.g5.16xlarge", "ml.p3.2xlarge"]
    arguments = ["plan", "--traffic", str(traffic), "--manifest", "build/manifest.json", "--no-stack"]
    arguments += ["--simulated-requests", "4000", "--max-instances", "3", "--price", "ml.g5.xlarge=1.2"]
    arguments += ["--region", "eu-west-1"]  # the table has no price there: unknown beside given
    cwd = Path.cwd()
    os.chdir(tmp_path)  # the manifest's location is part of the JSON: relative, so the same on every run
    try:
        assert main([*arguments, "--instance-types", *types, "--json", str(out)]) == 0
    finally:
        os.chdir(cwd)
    document = json.loads(out.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def _floats_apart(value: object, floats: list[float]) -> object:
    """The document with each float replaced by a marker, its floats collected in order: keys, their order
    and every other value compare exactly, the floats to 12 digits (numpy's sums may differ in the last bit
    from one CPU's vector instructions to another's)."""
    if isinstance(value, float):
        floats.append(value)
        return "<float>"
    if isinstance(value, dict):
        return [(key, _floats_apart(item, floats)) for key, item in value.items()]
    if isinstance(value, list):
        return [_floats_apart(item, floats) for item in value]
    return value


def test_the_plan_json_keeps_its_keys_and_values(tmp_path: Path) -> None:
    written = _plan_json(tmp_path)
    if os.environ.get("WRITE_PLAN_JSON"):
        Path(os.environ["WRITE_PLAN_JSON"]).write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
    if os.environ.get("RECORD_PLAN_JSON"):
        RECORDED.write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    # The input reaches every branch the document has.
    candidates = {c["instance_type"]: c for c in recorded["candidates"]}
    assert {"ml.g4dn.xlarge", "ml.g5.xlarge", "ml.g5.16xlarge"} == set(candidates)
    assert recorded["not_candidates"][0]["instance_type"] == "ml.p3.2xlarge"
    assert candidates["ml.g5.xlarge"]["price"]["source"] == "given"
    assert candidates["ml.g4dn.xlarge"]["price"] is None
    assert {c["feasible"] for c in candidates.values()} == {True, False}
    assert {a["gpu_source"] for a in recorded["archives"]} > {"estimate"}
    written_floats: list[float] = []
    recorded_floats: list[float] = []
    assert _floats_apart(written, written_floats) == _floats_apart(recorded, recorded_floats)  # key order too
    assert written_floats == pytest.approx(recorded_floats, rel=1e-12, abs=0)


def test_the_plan_json_is_the_same_whatever_its_rows_per_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = _plan_json(tmp_path / "whole")
    monkeypatch.setattr(plan_document, "ROWS_PER_CHUNK", 3)  # 40 archives: 13 chunks and a remainder
    chunked = _plan_json(tmp_path / "chunked")
    assert chunked == whole
    assert len(chunked["archives"]) == 40  # type: ignore[arg-type]

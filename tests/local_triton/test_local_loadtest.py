"""The load test against the real local Triton: each request's cache hit comes from the local endpoint,
and adds up to what the endpoint itself counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loadtest_support import triton_mme
from tiny_archives import BuiltArchive

from triton_mme.local_triton.runner import LocalTriton

pytestmark = pytest.mark.timeout(600)
REQUESTS = 8
# The request count ends the run: a busy machine may take longer than the default 60 s for eight requests
# that each load a model (a budget of one).
DURATION_S = 400


@pytest.mark.slow
def test_a_load_test_measures_the_local_tritons_own_cache_hits(
    built: tuple[Path, dict[str, BuiltArchive]], isolated: None, tmp_path: Path
) -> None:
    models_dir, _ = built
    traffic = tmp_path / "traffic.yaml"
    traffic.write_text("service_ms: 5\nzipf:\n  total_rate_per_s: 10\n  exponent: 0\n  format: onnx\n")
    out = tmp_path / "loadtest.json"
    with LocalTriton(models_dir=models_dir, port=0, model_budget=1, report=lambda _: None) as local:
        done = triton_mme(
            "loadtest",
            "--traffic",
            str(traffic),
            "--manifest",
            str(models_dir / "manifest.json"),
            "--local",
            local.url,
            "--rate",
            "0",
            "--users",
            "2",
            "--requests",
            str(REQUESTS),
            "--duration",
            str(DURATION_S),
            "--out",
            str(out),
            timeout=DURATION_S + 120,
        )
        assert done.returncode == 0, done.stderr
        counted = local.cache.hits + local.cache.misses
    report = json.loads(out.read_text())
    measured = report["measured"]
    assert measured["requests"] == REQUESTS and measured["errors"] == {
        "http_507": 0,
        "http_4xx": 0,
        "http_5xx": 0,
        "timeouts": 0,
        "model_not_ready": 0,
        "other": 0,
    }
    assert measured["configuration"]["model_budget"] == 1
    assert {m["model"] for m in measured["models"]} <= {"tiny-cnn/onnx", "tiny-roberta/onnx"}
    # Requests cut short at the end are neither measured nor, when Triton never answered them, counted.
    assert REQUESTS <= counted <= REQUESTS + 2
    assert report["server"]["requests"] == counted
    misses = sum(m["cold_loads"] for m in measured["models"])
    assert measured["cache_hit_rate"] == pytest.approx(1 - misses / REQUESTS)
    assert misses >= 1  # the first request of the run loads its model

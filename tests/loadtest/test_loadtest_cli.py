"""`triton-mme loadtest` in its own process against loopback stand-ins: what it counts, how it names
failures, and that `plan --compare` reads what it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loadtest_support import StubEndpoint, triton_mme
from planner_support import manifest_of, record, write_manifest

from triton_mme.cli import main

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    return write_manifest(tmp_path / "build", manifest_of(6))


def _traffic(tmp_path: Path, rates: list[float]) -> Path:
    path = tmp_path / "traffic.yaml"
    models = "".join(f"  - model: m{i:04d}\n    rate_per_s: {rate}\n" for i, rate in enumerate(rates))
    path.write_text(f"service_ms: 5\nseed: 3\nmodels:\n{models}")
    return path


def test_a_local_run_counts_hits_misses_and_each_kind_of_failure(
    manifest: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traffic = _traffic(tmp_path, [10, 10, 10, 10, 1, 1])
    out = tmp_path / "loadtest.json"
    slow, full = record(5).target_model, record(4).target_model
    with StubEndpoint(budget=2, behaviour={full: 507, slow: 0.6}) as stub:
        done = triton_mme(
            "loadtest",
            "--traffic",
            str(traffic),
            "--manifest",
            str(manifest),
            "--local",
            stub.url,
            "--rate",
            "0",
            "--users",
            "3",
            "--requests",
            "300",
            "--warmup-requests",
            "20",
            "--timeout",
            "0.2",
            "--out",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        server_total = stub.hits + stub.misses
    report = json.loads(out.read_text())
    measured = report["measured"]
    assert measured["requests"] == 300 and report["warmup_requests"] == 20
    assert measured["configuration"] == {
        "target": "local",
        "instance_type": None,
        "instances": 1,
        "model_budget": 2,
        "endpoint": stub.url,
    }
    models = {m["model"]: m for m in measured["models"]}
    assert measured["errors"]["http_507"] == models["m0004/onnx"]["requests"] > 0
    assert measured["errors"]["timeouts"] == models["m0005/onnx"]["requests"] > 0
    assert (
        models["m0004/onnx"]["cache_hit_rate"] is None
        and models["m0004/onnx"]["latency_ms"]["p50_ms"] is None
    )
    answered = [models[f"m000{i}/onnx"] for i in range(4)]
    hits = sum(m["requests"] - m["cold_loads"] for m in answered)
    assert measured["cache_hit_rate"] == pytest.approx(hits / sum(m["requests"] for m in answered))
    assert 0.2 < measured["cache_hit_rate"] < 0.8  # four equally called models, room for two: about one half
    # The stub counts a slow request when it answers, after the client gave up: up to one per user late.
    assert server_total - 3 <= report["server"]["requests"] <= server_total
    assert report["server"]["requests"] >= sum(m["requests"] for m in answered)
    assert report["server"]["cache_hit_rate"] == pytest.approx(measured["cache_hit_rate"], abs=0.1)
    assert "Local Triton, model budget 2: " in done.stdout.replace("local Triton", "Local Triton")
    assert "errors: 507 " in done.stdout

    assert main(["plan", "--compare", str(out), "--simulated-requests", "5000"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Configuration: local Triton, model budget 2; measured ")
    assert "cache-hit rate" in printed and "m0000/onnx" in printed


def test_a_sagemaker_run_signs_invoke_endpoint_and_names_its_errors(manifest: Path, tmp_path: Path) -> None:
    traffic = _traffic(tmp_path, [4, 1, 1, 1])
    out = tmp_path / "loadtest.json"
    behaviour = {
        record(1).target_model: "not ready",
        record(2).target_model: 507,
        record(3).target_model: 0.3,
    }
    with StubEndpoint(behaviour=behaviour) as stub:
        done = triton_mme(
            "loadtest",
            "--traffic",
            str(traffic),
            "--manifest",
            str(manifest),
            "--endpoint",
            "test-endpoint",
            "--instance-type",
            "ml.g5.xlarge",
            "--instances",
            "2",
            "--cold-threshold-ms",
            "200",
            "--rate",
            "0",
            "--users",
            "2",
            "--requests",
            "80",
            "--out",
            str(out),
            endpoint_url=stub.url,
        )
    assert done.returncode == 0, done.stderr
    measured = json.loads(out.read_text())["measured"]
    assert (
        measured["configuration"]["instance_type"] == "ml.g5.xlarge"
        and measured["configuration"]["instances"] == 2
    )
    models = {m["model"]: m for m in measured["models"]}
    assert measured["errors"]["model_not_ready"] == models["m0001/onnx"]["requests"] > 0
    assert measured["errors"]["http_507"] == models["m0002/onnx"]["requests"] > 0
    assert models["m0000/onnx"]["cache_hit_rate"] == 1.0  # fast: taken as loaded
    assert models["m0001/onnx"]["cache_hit_rate"] == 0.0  # ModelNotReadyException: cold
    assert models["m0003/onnx"]["cache_hit_rate"] == 0.0  # slower than the threshold: cold
    assert models["m0003/onnx"]["latency_ms"]["p50_ms"] >= 300


def test_a_local_url_that_is_not_the_local_endpoint_is_one_line(manifest: Path, tmp_path: Path) -> None:
    traffic = _traffic(tmp_path, [1])
    with StubEndpoint() as stub:
        stub.budget = None  # type: ignore[assignment]
        done = triton_mme(
            "loadtest",
            "--traffic",
            str(traffic),
            "--manifest",
            str(manifest),
            "--local",
            stub.url,
            "--out",
            str(tmp_path / "o.json"),
        )
    assert done.returncode == 1
    assert (
        done.stderr
        == f"error: --local {stub.url}: GET /models names no model budget (not triton-mme serve-local)\n"
    )


def test_without_a_cold_threshold_sagemaker_hits_are_not_guessed(manifest: Path, tmp_path: Path) -> None:
    traffic = _traffic(tmp_path, [1, 1])
    out = tmp_path / "loadtest.json"
    with StubEndpoint(behaviour={record(1).target_model: "not ready"}) as stub:
        done = triton_mme(
            "loadtest",
            "--traffic",
            str(traffic),
            "--manifest",
            str(manifest),
            "--endpoint",
            "test-endpoint",
            "--rate",
            "0",
            "--requests",
            "20",
            "--out",
            str(out),
            endpoint_url=stub.url,
        )
    assert done.returncode == 0, done.stderr
    measured = json.loads(out.read_text())["measured"]
    assert measured["cache_hit_rate"] is None and measured["errors"]["model_not_ready"] > 0


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--local", "http://example.com:80"], 1, "allowed http://127.0.0.1:<port>"),
        (["--local", "http://127.0.0.1:9"], 1, "127.0.0.1:9: the local endpoint does not answer"),
        (
            ["--local", "http://127.0.0.1:9", "--users", "0"],
            1,
            "--users: '0' is not allowed; users from 1 to 1000",
        ),
        (["--endpoint", "e", "--duration", "1e9"], 1, "--duration: '1e9' is not allowed; seconds from 1"),
    ],
)
def test_bad_arguments_are_one_line(
    manifest: Path, tmp_path: Path, args: list[str], status: int, message: str
) -> None:
    traffic = _traffic(tmp_path, [1])
    done = triton_mme(
        "loadtest",
        "--traffic",
        str(traffic),
        "--manifest",
        str(manifest),
        "--out",
        str(tmp_path / "o.json"),
        *args,
    )
    assert done.returncode == status
    assert message in done.stderr and "Traceback" not in done.stderr
    # One line, argparse's refusals too.
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    assert not (tmp_path / "o.json").exists()

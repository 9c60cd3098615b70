"""`triton-mme plan` end to end on a written manifest: the table, the JSON, the chart, the comparison."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planner_support import manifest_of, record, serving_report_of, write_manifest

from triton_mme.cli import main
from triton_mme.planner.eviction import che_hit_rate, zipf_popularity
from triton_mme.planner.outcome import Configuration, Latency, LoadTestReport, ModelOutcome, Outcome
from triton_mme.planner.traffic import parse_traffic

TRAFFIC = "duration_s: 86400\nservice_ms: 5\nzipf:\n  total_rate_per_s: 4\n  exponent: 1.0\n"
FAST = ["--simulated-requests", "5000", "--no-stack"]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    manifest = write_manifest(tmp_path / "build", manifest_of(120))
    traffic = tmp_path / "traffic.yaml"
    traffic.write_text(TRAFFIC + "targets:\n  min_cache_hit_rate: 0.9\n")
    return manifest, traffic


def test_the_plan_prints_a_row_per_type_and_a_recommendation(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest, traffic = files
    out_json, chart = tmp_path / "plan.json", tmp_path / "plan.png"
    args = [
        "plan",
        "--traffic",
        str(traffic),
        "--manifest",
        str(manifest),
        "--json",
        str(out_json),
        "--chart",
        str(chart),
    ]
    assert main([*args, *FAST, "--instance-types", "ml.g4dn.xlarge", "ml.g5.2xlarge"]) == 0
    printed = capsys.readouterr().out
    assert "Targets: GPU utilization <= 60 %; cache-hit rate >= 90.0 %." in printed
    assert "Footprints: 0 from the serving report, 120 estimated" in printed
    rows = [line for line in printed.splitlines() if line.startswith("ml.")]
    assert [row.split()[0] for row in rows] == ["ml.g4dn.xlarge", "ml.g5.2xlarge"]
    assert all(row.rstrip().endswith(("hit rate", "GPU time")) for row in rows)  # what set each count
    assert "Recommendation: ml.g4dn.xlarge x " in printed
    plan = json.loads(out_json.read_text())
    assert [c["instance_type"] for c in plan["candidates"]] == ["ml.g4dn.xlarge", "ml.g5.2xlarge"]
    first = plan["candidates"][0]
    assert first["feasible"] and first["prediction"]["cache_hit_rate"] >= 0.9
    assert len(first["prediction"]["models"]) == 120 and first["one_endpoint_per_model"]["instances"] == 120
    assert plan["archives"][0]["gpu_source"] == "estimate"
    assert chart.read_bytes().startswith(b"\x89PNG")


def test_a_serving_report_beside_the_manifest_is_used_when_it_is_for_this_build(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    manifest, traffic = files
    report = serving_report_of(manifest_of(120))
    beside = manifest.with_name("serving-report.json")
    plan = [
        "plan",
        "--traffic",
        str(traffic),
        "--manifest",
        str(manifest),
        "--instance-types",
        "ml.g4dn.xlarge",
    ]
    beside.write_text(report.model_dump_json())
    assert main([*plan, *FAST]) == 0
    assert "Footprints: 1 from the serving report, 119 estimated" in capsys.readouterr().out
    beside.write_text(report.model_copy(update={"manifest_sha256": "f" * 64}).model_dump_json())
    assert main([*plan, *FAST]) == 0
    captured = capsys.readouterr()
    assert (
        "note: serving-report.json is for another build (manifest digest differs): not used" in captured.err
    )
    assert "Footprints: 0 from the serving report" in captured.out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--instance-types", "ml.g6.xlarge"],
            "error: --instance-types ml.g6.xlarge: not a GPU multi-model instance type",
        ),
        (["--price", "ml.g5.xlarge=cheap"], "error: --price 'ml.g5.xlarge=cheap': allowed TYPE=USD_PER_HOUR"),
        (["--manifest", "/nonexistent/manifest.json"], "error: /nonexistent/manifest.json: cannot read it"),
    ],
)
def test_a_bad_argument_is_one_line(
    files: tuple[Path, Path], extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest, traffic = files
    assert main(["plan", "--traffic", str(traffic), "--manifest", str(manifest), *extra]) == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_a_bad_traffic_file_is_one_line(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    manifest, traffic = files
    traffic.write_text("zipf:\n  total_rate_per_s: -1\n")
    assert main(["plan", "--traffic", str(traffic), "--manifest", str(manifest)]) == 1
    assert capsys.readouterr().err == (
        f"error: {traffic}: zipf.total_rate_per_s: Input should be greater than 0 (got -1)\n"
    )
    assert main(["plan", "--manifest", str(manifest)]) == 1
    assert "error: --traffic FILE is required (or --compare LOADTEST.json)" in capsys.readouterr().err


def test_a_model_budget_plans_the_local_triton(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    manifest, traffic = files
    assert (
        main(["plan", "--traffic", str(traffic), "--manifest", str(manifest), "--model-budget", "20", *FAST])
        == 0
    )
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("local Triton"))
    assert "model budget" in row


def _load_test(manifest: Path, hit_rate: float) -> LoadTestReport:
    traffic = parse_traffic({"service_ms": 5, "zipf": {"total_rate_per_s": 4, "exponent": 1.0}})
    models = tuple(
        ModelOutcome(
            model=f"m{i:04d}/onnx",
            target_model=record(i).target_model,
            requests=50 - i,
            cache_hit_rate=hit_rate,
            cold_loads=5,
            latency_ms=Latency(p50_ms=6, p99_ms=4000),
        )
        for i in range(5)
    )
    measured = Outcome(
        kind="measured",
        configuration=Configuration(target="local", model_budget=20, endpoint="http://127.0.0.1:1"),
        duration_s=100,
        requests=240,
        request_rate_per_s=2.4,
        cache_hit_rate=hit_rate,
        cold_loads_per_hour=900,
        latency_ms=Latency(p50_ms=6, p99_ms=4000),
        models=models,
    )
    return LoadTestReport(
        traffic=traffic,
        manifest=str(manifest),
        users=2,
        rate_per_s=None,
        warmup_s=0,
        warmup_requests=40,
        measured=measured,
    )


def test_compare_predicts_the_configuration_of_the_load_test_and_prints_both(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest, _ = files
    report = tmp_path / "loadtest.json"
    report.write_text(_load_test(manifest, 0.5).model_dump_json())
    out = tmp_path / "comparison.json"
    assert main(["plan", "--compare", str(report), "--json", str(out), *FAST]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(
        "Configuration: local Triton, model budget 20; measured 240 requests over 100 s"
    )
    hit_row = next(line for line in printed.splitlines() if line.startswith("cache-hit rate"))
    predicted, measured = json.loads(out.read_text())["predicted"], json.loads(out.read_text())["measured"]
    assert measured["cache_hit_rate"] == 0.5
    assert predicted["cache_hit_rate"] == pytest.approx(che_hit_rate(zipf_popularity(120, 1.0), 20), abs=0.02)
    assert predicted["configuration"] == measured["configuration"]
    assert predicted["request_rate_per_s"] == pytest.approx(2.4)  # predicted at the measured rate
    difference = 100 * (predicted["cache_hit_rate"] - 0.5)
    assert hit_row.split()[-2] == f"{difference:+.1f}" and "50.0 %" in hit_row
    assert "m0000/onnx" in printed


def test_compare_refuses_a_file_that_is_not_a_load_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "other.json"
    report.write_text('{"schema_version": 1}')
    assert main(["plan", "--compare", str(report)]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith(f"error: {report}: not a load test result of `triton-mme loadtest` (")
        and err.count("\n") == 1
    )

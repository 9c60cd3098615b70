"""The traffic file: rates by Zipf's law or per model, resolved against the manifest; one line per problem."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from planner_support import manifest_of, record

from triton_mme.core.manifest import Manifest
from triton_mme.planner.traffic import TrafficError, parse_traffic, read_traffic, workload


def test_zipf_spreads_the_total_rate_over_the_manifest_in_its_order() -> None:
    traffic = parse_traffic({"zipf": {"total_rate_per_s": 30, "exponent": 1.0}, "service_ms": 5})
    load = workload(traffic, manifest_of(3))
    assert load.rates_per_s.tolist() == pytest.approx(
        [30 / (1 + 1 / 2 + 1 / 3) * w for w in (1, 1 / 2, 1 / 3)]
    )
    assert load.total_rate_per_s == pytest.approx(30)
    assert load.labels == ("m0000/onnx", "m0001/onnx", "m0002/onnx")
    assert load.default_service_ms == 5 and load.service_ms == (None, None, None)


def test_zipf_order_format_and_per_model_service_times() -> None:
    manifest = Manifest(archives=(record(0), record(1), record(1, format="torchscript")))
    traffic = parse_traffic(
        {
            "zipf": {"total_rate_per_s": 10, "exponent": 0, "format": "onnx", "order": ["m0001", "m0000"]},
            "models": [{"model": "m0000", "format": "onnx", "service_ms": 7}],
        }
    )
    load = workload(traffic, manifest)
    assert load.labels == ("m0001/onnx", "m0000/onnx")
    assert load.rates_per_s.tolist() == [5.0, 5.0]
    assert load.service_ms == (None, 7.0)


def test_per_model_rates_by_name_or_target_model() -> None:
    manifest = manifest_of(3)
    traffic = parse_traffic(
        {"models": [{"model": "m0002", "rate_per_s": 4}, {"model": record(0).target_model, "rate_per_s": 1}]}
    )
    load = workload(traffic, manifest)
    assert load.labels == ("m0002/onnx", "m0000/onnx")
    assert np.allclose(load.popularity, [0.8, 0.2])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "give either zipf (a total rate over the catalog) or models (a rate per model)"),
        ({"zipf": {"total_rate_per_s": 0}}, "zipf.total_rate_per_s: Input should be greater than 0 (got 0)"),
        ({"zipf": {"total_rate_per_s": 1, "exponent": -1}}, "zipf.exponent: Input should be greater"),
        (
            {"zipf": {"total_rate_per_s": 1}, "models": [{"model": "m0000", "rate_per_s": 2}]},
            "models[0].rate_per_s: not allowed with zipf",
        ),
        ({"models": [{"model": "m0000"}]}, "models[0].rate_per_s: required field is missing (no zipf given)"),
        ({"models": [{"model": "m0000", "rate_per_s": 0}]}, "every rate_per_s is 0"),
        ({"zipf": {"total_rate_per_s": 1}, "duration_s": "a day"}, "duration_s: Input should be a valid"),
        ({"zipf": {"total_rate_per_s": 1}, "burst": 2}, "burst: unknown field"),
        (
            {"zipf": {"total_rate_per_s": 1}, "targets": {"min_cache_hit_rate": 95}},
            "targets.min_cache_hit_rate: Input should be less than or equal to 1 (got 95)",
        ),
    ],
)
def test_a_bad_traffic_file_is_refused_in_one_line(raw: dict[str, object], message: str) -> None:
    with pytest.raises(TrafficError) as caught:
        parse_traffic(raw, origin="traffic.yaml")
    text = str(caught.value)
    assert text.startswith("traffic.yaml: ") and message in text and "\n" not in text


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"models": [{"model": "absent", "rate_per_s": 1}]}, "models[0]: no archive for model 'absent'"),
        ({"models": [{"model": "m0000", "rate_per_s": 1}] * 2}, "models[1]: m0000/onnx is listed twice"),
        (
            {"zipf": {"total_rate_per_s": 1, "format": "tensorrt"}},
            "zipf: the manifest has no archives in format",
        ),
        ({"zipf": {"total_rate_per_s": 1, "order": ["m0000", "m0000"]}}, "zipf.order names an archive twice"),
    ],
)
def test_a_traffic_file_that_does_not_fit_the_manifest_is_refused_in_one_line(
    raw: dict[str, object], message: str
) -> None:
    with pytest.raises(TrafficError, match=r"^t: ") as caught:
        workload(parse_traffic(raw), manifest_of(2), origin="t")
    assert message in str(caught.value)


def test_yaml_and_json_files_read_alike(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("zipf:\n  total_rate_per_s: 3\nseed: 4\n")
    (tmp_path / "t.json").write_text('{"zipf": {"total_rate_per_s": 3}, "seed": 4}')
    assert read_traffic(tmp_path / "t.yaml") == read_traffic(tmp_path / "t.json")
    (tmp_path / "bad.yaml").write_text("zipf: [\n")
    with pytest.raises(TrafficError, match=r"bad\.yaml: not valid YAML at line"):
        read_traffic(tmp_path / "bad.yaml")
    with pytest.raises(TrafficError, match=r"absent\.yaml: cannot read the traffic file"):
        read_traffic(tmp_path / "absent.yaml")

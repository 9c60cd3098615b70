"""The traffic file of docs/capacity-planning.md works against the default offline build as written;
`order` only orders; numbers are strict; an unknown field lists the allowed ones."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from planner_support import record

from triton_mme.core.manifest import Manifest
from triton_mme.planner.traffic import TrafficError, parse_traffic, workload

DOC = Path(__file__).resolve().parents[2] / "docs" / "capacity-planning.md"


def _documented_traffic() -> dict[str, object]:
    section = DOC.read_text(encoding="utf-8").split("## The traffic file", 1)[1]
    raw = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    assert isinstance(raw, dict)
    return raw


def _default_offline_build() -> Manifest:
    """What `make build-models` records for models.yaml: resnet50 in ONNX and TorchScript, roberta-large in
    ONNX (TensorRT skipped)."""
    shapes = [("resnet50", "onnx"), ("resnet50", "torchscript"), ("roberta-large", "onnx")]
    return Manifest(
        archives=tuple(
            record(i, format=fmt).model_copy(
                update={"name": name, "target_model": f"{name}-{fmt}-{i:016x}.tar.gz"}
            )
            for i, (name, fmt) in enumerate(shapes)
        )
    )


def test_the_documented_traffic_file_resolves_against_the_default_build() -> None:
    load = workload(parse_traffic(_documented_traffic()), _default_offline_build())
    assert load.labels == ("resnet50/onnx", "roberta-large/onnx")
    assert load.service_ms == (12.0, None)


def test_order_puts_the_named_models_first_without_dropping_the_others() -> None:
    raw = {"zipf": {"total_rate_per_s": 10, "order": ["roberta-large"]}}
    load = workload(parse_traffic(raw), _default_offline_build())
    assert load.labels == ("roberta-large/onnx", "resnet50/onnx", "resnet50/torchscript")
    assert load.rates_per_s[0] > load.rates_per_s[1] > load.rates_per_s[2]


def test_a_quoted_exponent_is_refused() -> None:
    with pytest.raises(
        TrafficError, match=r"zipf\.exponent: .* \(got '1\.5'\); allowed: a number, written without"
    ):
        parse_traffic({"zipf": {"total_rate_per_s": 1, "exponent": "1.5"}})


def test_an_unknown_field_lists_the_allowed_ones() -> None:
    with pytest.raises(TrafficError) as caught:
        parse_traffic({"zipf": {"total_rate_per_s": 1, "exponnt": 1}})
    assert str(caught.value) == (
        "traffic: zipf.exponnt: unknown field; allowed: total_rate_per_s, exponent, format, order"
    )


def test_the_placement_page_shows_the_planners_table_for_the_documented_traffic(tmp_path: Path) -> None:
    from benchmarks.placement import default_build, documented_traffic, placement_markdown, placement_of

    page = (DOC.parent / "placement.md").read_text(encoding="utf-8")
    shown = page.split("<!-- placement-table -->\n", 1)[1].split("<!-- /placement-table -->", 1)[0]
    placement = placement_of(documented_traffic(), default_build(), tmp_path)
    assert placement is not None
    assert shown == placement_markdown(placement)

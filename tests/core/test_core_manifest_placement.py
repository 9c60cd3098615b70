"""Where each archive is served, in the manifest: absent means the multi-model endpoint (and keeps an older
manifest's bytes and digest); a dedicated archive's inference component is named by one rule, after its
endpoint and model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from triton_mme.core.manifest import ComponentPlacement, Manifest, ManifestError
from triton_mme.core.naming import (
    INFERENCE_COMPONENT_NAME,
    INFERENCE_COMPONENT_NAME_LENGTH,
    LOCAL_COMPONENT_ENDPOINT,
    inference_component_name,
)

RECORD: dict[str, Any] = {
    "name": "resnet50",
    "format": "onnx",
    "target_model": "resnet50-onnx-0123456789abcdef.tar.gz",
    "sha256": "0" * 64,
    "size_bytes": 1,
    "source": "torchvision:resnet50",
    "weights": "random",
    "max_batch_size": 8,
    "inputs": [{"name": "input", "datatype": "FP32", "dims": [3, 224, 224]}],
    "outputs": [{"name": "output", "datatype": "FP32", "dims": [1000]}],
}


def _document(**changes: Any) -> str:
    return json.dumps({"schema_version": 1, "archives": [{**RECORD, **changes}]}, indent=2, sort_keys=True)


def test_the_component_name_is_the_endpoint_and_the_model() -> None:
    assert inference_component_name("triton-mme-ic", "resnet50") == "triton-mme-ic-resnet50"


def test_a_long_name_is_cut_to_sagemakers_limit_and_two_long_names_stay_apart() -> None:
    first = inference_component_name("e" * 40, "a" * 48 + "-b")
    second = inference_component_name("e" * 40, "a" * 48 + "-c")
    assert len(first) == len(second) == INFERENCE_COMPONENT_NAME_LENGTH
    assert first != second
    assert INFERENCE_COMPONENT_NAME.match(first) and INFERENCE_COMPONENT_NAME.match(second)


def test_a_rebuilt_archive_keeps_its_component_and_two_endpoints_do_not_share_one() -> None:
    # One name per endpoint and model: a new archive updates the component in place (its rolling update).
    assert inference_component_name("stack-a-ic", "resnet50") != inference_component_name(
        "stack-b-ic", "resnet50"
    )
    assert inference_component_name(LOCAL_COMPONENT_ENDPOINT, "resnet50") == "local-resnet50"


def test_a_manifest_without_placements_reads_as_the_multi_model_endpoint_and_keeps_its_bytes() -> None:
    # As a build wrote it before placements: every field spelled out, none of them a placement.
    old = _document(details={}, files={}, preprocessing=None, provenance=None)
    manifest = Manifest.from_json(old)
    assert not manifest.archives[0].is_dedicated
    assert manifest.to_json() == old + "\n"


def test_a_dedicated_archive_round_trips_with_its_component() -> None:
    placement = {"kind": "dedicated", "min_copies": 0}
    manifest = Manifest.from_json(_document(placement=placement))
    record = manifest.archives[0]
    assert record.is_dedicated
    assert isinstance(record.placement, ComponentPlacement) and record.placement.scales_to_zero
    assert json.loads(manifest.to_json())["archives"][0]["placement"] == placement
    assert Manifest.from_json(manifest.to_json()) == manifest


@pytest.mark.parametrize(
    ("placement", "message"),
    [
        ({"kind": "elsewhere"}, r"archives\[0\]\.placement: .*'mme', 'dedicated'"),
        ({"kind": "dedicated", "min_copies": -1}, r"archives\[0\]\.placement\.dedicated\.min_copies: "),
        ({"kind": "dedicated", "inference_component": "x"}, r"placement\.dedicated\.inference_component: "),
    ],
)
def test_a_placement_that_cannot_be_used_is_refused_in_one_line(
    placement: dict[str, Any], message: str
) -> None:
    with pytest.raises(ManifestError, match=message) as caught:
        Manifest.from_json(_document(placement=placement))
    assert "\n" not in str(caught.value)

"""Where each archive is served, in the manifest: absent means the multi-model endpoint (and keeps an older
manifest's bytes and digest); a dedicated archive names its inference component, by one naming rule."""

from __future__ import annotations

import json
from typing import Any

import pytest

from triton_mme.core.manifest import ComponentPlacement, Manifest, ManifestError
from triton_mme.core.naming import (
    INFERENCE_COMPONENT_NAME,
    INFERENCE_COMPONENT_NAME_LENGTH,
    InvalidName,
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


def test_the_component_name_is_the_target_model_without_its_suffix() -> None:
    assert (
        inference_component_name("resnet50-onnx-0123456789abcdef.tar.gz") == "resnet50-onnx-0123456789abcdef"
    )


def test_a_long_model_name_is_shortened_never_the_content_hash() -> None:
    longest = "a" * 48 + "-b"  # 50 characters, the model name rule's most
    name = inference_component_name(f"{longest}-torchscript-0123456789abcdef.tar.gz")
    assert len(name) == INFERENCE_COMPONENT_NAME_LENGTH
    assert name.endswith("-torchscript-0123456789abcdef")
    assert INFERENCE_COMPONENT_NAME.match(name)


def test_a_shortened_name_never_ends_in_a_hyphen_before_its_tail() -> None:
    # Cut at 34 characters, this model name ends in "-": the cut drops it instead of doubling the hyphen.
    name = inference_component_name("a" * 33 + "-bc-torchscript-0123456789abcdef.tar.gz")
    assert name == "a" * 33 + "-torchscript-0123456789abcdef"
    assert INFERENCE_COMPONENT_NAME.match(name)


def test_two_archives_of_one_model_get_two_components() -> None:
    first = inference_component_name("resnet50-onnx-0123456789abcdef.tar.gz")
    rebuilt = inference_component_name("resnet50-onnx-fedcba9876543210.tar.gz")
    assert first != rebuilt


def test_a_name_that_is_not_a_target_model_is_refused() -> None:
    with pytest.raises(InvalidName, match=r"^TargetModel: '../x.tar.gz' is not an archive name"):
        inference_component_name("../x.tar.gz")


def test_a_manifest_without_placements_reads_as_the_multi_model_endpoint_and_keeps_its_bytes() -> None:
    # As a build wrote it before placements: every field spelled out, none of them a placement.
    old = _document(details={}, files={}, preprocessing=None, provenance=None)
    manifest = Manifest.from_json(old)
    assert manifest.archives[0].inference_component is None
    assert manifest.to_json() == old + "\n"


def test_a_dedicated_archive_round_trips_with_its_component() -> None:
    placement = {
        "kind": "dedicated",
        "inference_component": "resnet50-onnx-0123456789abcdef",
        "min_copies": 0,
    }
    manifest = Manifest.from_json(_document(placement=placement))
    record = manifest.archives[0]
    assert record.inference_component == "resnet50-onnx-0123456789abcdef"
    assert isinstance(record.placement, ComponentPlacement) and record.placement.scales_to_zero
    assert json.loads(manifest.to_json())["archives"][0]["placement"] == placement
    assert Manifest.from_json(manifest.to_json()) == manifest


@pytest.mark.parametrize(
    ("placement", "message"),
    [
        ({"kind": "elsewhere"}, r"archives\[0\]\.placement: .*'mme', 'dedicated'"),
        (
            {"kind": "dedicated"},
            r"archives\[0\]\.placement\.dedicated\.inference_component: required field is missing",
        ),
        (
            {"kind": "dedicated", "inference_component": "-bad-"},
            r"inference_component: not an inference component name; allowed letters, digits and hyphens",
        ),
        (
            {"kind": "dedicated", "inference_component": "x" * 64},
            r"inference_component: not an inference component name; .* at most 63 characters",
        ),
    ],
)
def test_a_placement_that_cannot_be_used_is_refused_in_one_line(
    placement: dict[str, Any], message: str
) -> None:
    with pytest.raises(ManifestError, match=message) as caught:
        Manifest.from_json(_document(placement=placement))
    assert "\n" not in str(caught.value)

"""Invalid catalog entries fail before any work, in one line naming entry, field and allowed values."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from build_support import catalog_of, tiny_cnn, tiny_roberta

from triton_mme.catalog import CatalogError, load_catalog, parse_catalog
from triton_mme.model_build.pipeline import build_catalog


def _error(raw: Any) -> str:
    with pytest.raises(CatalogError) as caught:
        parse_catalog(raw)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (tiny_cnn(name="Tiny_CNN"), r"model 'Tiny_CNN': name: lowercase letters, digits and hyphens"),
        (tiny_cnn(name="a" * 51), r"name: .*at most 50 characters"),
        (
            tiny_cnn(source="pypi:resnet"),
            r"model 'tiny-cnn': source: 'torchvision:<model>', 'huggingface:<model id>' or 'checkpoint:",
        ),
        (tiny_cnn(weights="imagenet"), r"model 'tiny-cnn': weights: .*'pretrained' or 'random'"),
        (tiny_cnn(formats=[]), r"model 'tiny-cnn': formats: at least one of onnx, torchscript, tensorrt"),
        (tiny_cnn(formats=["onnx", "onnx"]), r"formats: each format at most once"),
        (
            tiny_cnn(formats=["savedmodel"]),
            r"model 'tiny-cnn': formats\[0\]: .*'onnx', 'torchscript' or 'tensorrt'",
        ),
        (tiny_cnn(max_batch_size=0), r"model 'tiny-cnn': max_batch_size: .*greater than or equal to 1"),
        (tiny_cnn(max_batch_size=5000), r"max_batch_size: .*less than or equal to 1024"),
        (tiny_cnn(sequence_length=128), r"sequence_length: only for text models; use input_shape"),
        (tiny_cnn(hf_config="roberta-base"), r"hf_config: only for huggingface sources"),
        (
            tiny_roberta(input_shape=[3, 8, 8]),
            r"input_shape: only for image models; use sequence_length",
        ),
        (tiny_cnn(input_shape=[3, 0, 64]), r"input_shape\[1\]: .*greater than or equal to 1"),
        (
            tiny_cnn(input_shape=[3, 100000, 100000]),
            r"input_shape \[3, 100000, 100000\]: 30,000,000,000 elements per sample; "
            r"allowed at most 134,217,728$",
        ),
        (
            tiny_cnn(input_shape=[3, 2000000, 1]),
            r"input_shape \[3, 2000000, 1\]: dimension 2000000 is not allowed; allowed 1\.\.1,048,576",
        ),
        (
            tiny_cnn(input_shape=[3, 1024, 1024], max_batch_size=1024),
            r"3,221,225,472 elements at max_batch_size 1024; allowed at most 268,435,456 "
            r"\(lower max_batch_size",
        ),
        (tiny_cnn(input_shape=[]), r"input_shape: .*at least 1 item"),
        (
            tiny_cnn(max_batch_size=999999999),
            r"max_batch_size: .*less than or equal to 1024 \(got 999999999\)",
        ),
        (tiny_roberta(sequence_length=100000), r"sequence_length: .*less than or equal to 8192"),
        (
            tiny_cnn(dynamic_batching={"preferred_batch_sizes": [8]}),
            r"preferred_batch_sizes: 8 is above max_batch_size 4; allowed 1\.\.4",
        ),
        (tiny_cnn(instance_count=0), r"instance_count: .*greater than or equal to 1"),
        (tiny_cnn(tensorrt={"precision": "int8"}), r"tensorrt\.precision: .*'fp16' or 'fp32'"),
        (
            tiny_cnn(onnxruntime={"graph_optimization": "max"}),
            r"onnxruntime\.graph_optimization: .*'disabled'",
        ),
        (tiny_cnn(onnxruntime={"execution_mode": "async"}), r"onnxruntime\.execution_mode: .*'sequential'"),
        (tiny_cnn(colour="red"), r"model 'tiny-cnn': colour: unknown field"),
    ],
)
def test_invalid_entry_is_one_line_naming_entry_field_and_allowed(
    entry: dict[str, Any], expected: str
) -> None:
    assert re.search(expected, _error({"models": [entry]}))


def test_missing_required_field_names_the_entry_by_position() -> None:
    entry = tiny_cnn()
    del entry["name"]
    assert _error({"models": [entry]}) == "catalog: model #1: name: required field is missing"


def test_duplicate_names_are_rejected() -> None:
    assert "name: used twice" in _error({"models": [tiny_cnn(), tiny_cnn()]})


def test_catalog_must_be_a_mapping_with_models() -> None:
    assert "expected a mapping with a 'models' list" in _error({"model": []})


@pytest.mark.parametrize("raw", [{"models": []}, []])
def test_an_empty_catalog_is_refused(raw: Any) -> None:
    assert _error(raw) == (
        "catalog: catalog: the 'models' list is empty; allowed: at least one model entry (docs/catalog.md)"
    )


def test_unreadable_and_invalid_yaml_files(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot read the model catalog"):
        load_catalog(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"not valid YAML at line \d"):
        load_catalog(bad)


def test_default_catalog_is_valid() -> None:
    catalog = load_catalog(Path(__file__).parents[2] / "models.yaml")
    assert [m.name for m in catalog.models] == ["resnet50", "roberta-large"]
    assert catalog.entry("resnet50").image_shape == (3, 224, 224)
    assert catalog.entry("roberta-large").text_length == 512


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            tiny_cnn(source="torchvision:resnet5000"),
            "model 'tiny-cnn': source: torchvision has no model 'resnet5000'",
        ),
        (
            tiny_roberta(hf_config="roberta-huge"),
            "model 'tiny-roberta': hf_config: no shipped config 'roberta-huge' for weights: random; "
            "allowed a mapping of config fields or one of: roberta-base, roberta-large",
        ),
        (tiny_roberta(hf_config={"hidden_size": 8}), "model 'tiny-roberta': hf_config: needs 'model_type'"),
    ],
)
def test_entries_that_cannot_be_built_fail_before_any_work(
    tmp_path: Path, entry: dict[str, Any], expected: str
) -> None:
    out = tmp_path / "out"
    # A valid model listed first must not be built when a later one is unbuildable.
    with pytest.raises(CatalogError) as caught:
        build_catalog(catalog_of(tiny_cnn(name="first"), entry), out, progress=False)
    assert str(caught.value).startswith(expected)
    assert not out.exists()


def test_unknown_only_name_lists_known_models(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="no model named 'nope' in the catalog; known: tiny-cnn"):
        build_catalog(catalog_of(tiny_cnn()), tmp_path, only="nope", progress=False)

"""One rule per name that becomes a key or a path, matched against the whole string, wherever it enters."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from build_support import catalog_of, tiny_cnn, tiny_roberta

from triton_mme.catalog import CatalogError, parse_catalog
from triton_mme.core.manifest import Manifest, ManifestError
from triton_mme.core.naming import (
    ARCHIVE_NAME,
    COMPANION_NAME,
    HF_CONFIG_NAME,
    MODEL_NAME,
    InvalidName,
    NameRule,
)
from triton_mme.model_build.pipeline import build_catalog
from triton_mme.sizing import hf_config

RECORD = {
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
    "files": {"labels": "labels-0123456789abcdef.json"},
}
# Careless and hostile spellings: none of them is a name under any rule.
NOT_NAMES = [
    "resnet50\n",
    "resnet50\r",
    " resnet50",
    "../resnet50",
    "a/b",
    "/abs",
    "resnet50\u202e",
    "rés",
    "",
    "x" * 300,
]


@pytest.mark.parametrize(
    "rule", [MODEL_NAME, ARCHIVE_NAME, COMPANION_NAME, HF_CONFIG_NAME], ids=lambda r: r.kind
)
@pytest.mark.parametrize("value", NOT_NAMES, ids=ascii)
def test_no_rule_accepts_a_careless_or_hostile_spelling(rule: NameRule, value: str) -> None:
    good = {
        MODEL_NAME.kind: "resnet50",
        ARCHIVE_NAME.kind: "resnet50-onnx-0123456789abcdef.tar.gz",
        COMPANION_NAME.kind: "labels-0123456789abcdef.json",
        HF_CONFIG_NAME.kind: "roberta-base",
    }[rule.kind]
    assert rule.match(good)
    for spelling in (value, good + value, value + good):
        if spelling != good:
            assert rule.match(spelling) is None, spelling


def test_the_archive_rule_is_a_full_match_even_where_re_match_with_dollar_would_pass() -> None:
    name = "resnet50-onnx-0123456789abcdef.tar.gz\n"
    assert re.match(r"^.*\.tar\.gz$", name)  # the bug the rule avoids: `$` matches before a final newline
    assert ARCHIVE_NAME.match(name) is None
    with pytest.raises(InvalidName) as caught:
        ARCHIVE_NAME.check(name, where="--target-model")
    assert str(caught.value) == (
        "--target-model: 'resnet50-onnx-0123456789abcdef.tar.gz\\n' is not an archive name; allowed "
        "<model name>-<onnx|torchscript|tensorrt>-<16 lowercase hex digits>.tar.gz"
    )


def test_a_catalog_name_with_a_trailing_newline_is_refused_in_one_line() -> None:
    with pytest.raises(CatalogError) as caught:
        parse_catalog({"models": [tiny_cnn(name="resnet50\n")]})
    assert str(caught.value) == (
        "catalog: model 'resnet50\\n': name: lowercase letters, digits and hyphens, starting and ending with "
        "a letter or digit, at most 50 characters (got 'resnet50\\n')"
    )


@pytest.mark.parametrize("name", ["../../elsewhere/cfg", "/etc/hosts", "roberta-base/../../x", ".hidden", ""])
def test_an_hf_config_name_that_is_a_path_is_refused_by_the_catalog(name: str) -> None:
    with pytest.raises(CatalogError) as caught:
        parse_catalog({"models": [tiny_roberta(hf_config=name)]})
    message = str(caught.value)
    assert message.startswith(
        "catalog: model 'tiny-roberta': hf_config: a mapping of config fields or the name"
    )
    assert "\n" not in message


def test_a_shipped_config_name_never_leaves_the_shipped_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even a symbolic link planted in the directory cannot lead the build to a file elsewhere."""
    shipped = tmp_path / "hf_configs"
    shipped.mkdir()
    (shipped / "roberta-base.json").write_text(json.dumps({"model_type": "roberta"}))
    (tmp_path / "elsewhere.json").write_text(json.dumps({"model_type": "bert"}))
    (shipped / "linked.json").symlink_to(tmp_path / "elsewhere.json")
    monkeypatch.setattr(hf_config, "HF_CONFIG_DIR", shipped)
    catalog = catalog_of(
        tiny_roberta(hf_config="roberta-base"), tiny_roberta(name="other", hf_config="linked")
    )

    assert hf_config.resolve_hf_config(catalog.entry("tiny-roberta")) == {"model_type": "roberta"}
    with pytest.raises(CatalogError, match=r"^model 'other': hf_config: no shipped config 'linked'"):
        hf_config.resolve_hf_config(catalog.entry("other"))


def test_the_default_config_name_from_a_model_id_is_checked_too(tmp_path: Path) -> None:
    entry = catalog_of(tiny_roberta(source="huggingface:org/..", hf_config=None)).models[0]
    with pytest.raises(CatalogError, match=r"no shipped config '\.\.' for weights: random"):
        build_catalog(catalog_of(tiny_roberta(source="huggingface:org/..", hf_config=None)), tmp_path / "o")
    assert entry.source_id == "org/.."
    assert not (tmp_path / "o").exists()


def _manifest(**changes: Any) -> str:
    return json.dumps({"schema_version": 1, "archives": [{**RECORD, **changes}]})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"target_model": "../secret.txt"},
            "archives[0].target_model: not an archive name; allowed <model name>-<onnx|torchscript|tensorrt>-"
            "<16 lowercase hex digits>.tar.gz (got '../secret.txt')",
        ),
        (
            {"target_model": "resnet50-onnx-0123456789abcdef.tar.gz\n"},
            "archives[0].target_model: not an archive name",
        ),
        ({"name": "resnet50\n"}, "archives[0].name: not a model name; allowed lowercase letters"),
        ({"format": "../onnx"}, "archives[0].format: one of onnx, torchscript, tensorrt (got '../onnx')"),
        (
            {"files": {"labels": "../labels-0123456789abcdef.json"}},
            "archives[0].files: labels: '../labels-0123456789abcdef.json' is not a labels file name; allowed "
            "labels-<content hash>.json",
        ),
        (
            {"files": {"labels": "tokenizer-0123456789abcdef.json"}},
            "archives[0].files: labels: 'tokenizer-0123456789abcdef.json' is not a labels file name",
        ),
        (
            {"files": {"../x": "x-0123456789abcdef.json"}},
            "archives[0].files: role '../x' is not a companion role",
        ),
        (
            {"max_batch_size": 999999999},
            "archives[0].max_batch_size: Input should be less than or equal to 1024",
        ),
        ({"inputs": [{"name": "x", "datatype": "FP32", "dims": [-7]}]}, "archives[0].inputs[0].dims[0]:"),
    ],
)
def test_a_manifest_with_a_bad_name_cannot_even_be_loaded(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        Manifest.from_json(_manifest(**changes))
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_a_manifest_with_two_archives_for_one_model_and_format_is_refused() -> None:
    document = json.loads(_manifest())
    document["archives"].append({**RECORD, "target_model": "resnet50-onnx-fedcba9876543210.tar.gz"})
    with pytest.raises(ManifestError, match=r"^manifest: model 'resnet50' has two archives in format onnx$"):
        Manifest.from_json(json.dumps(document))


def test_a_valid_manifest_round_trips() -> None:
    manifest = Manifest.from_json(_manifest())
    assert Manifest.from_json(manifest.to_json()) == manifest

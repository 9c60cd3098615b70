"""A checkpoint is exactly its pinned files, loaded strictly: what `lock`, synthesis and the build refuse of a
folder or file that would bring in bytes from outside its pin, random weights, or a model larger than its
weights (one line each)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.checkpoints import write_hf_folders, write_state_dicts
from triton_mme.catalog import CatalogError, load_catalog
from triton_mme.catalog.checkpoints import CheckpointKind, local_digest
from triton_mme.model_build.lock import write_lock
from triton_mme.model_build.pipeline import fetch_checkpoints
from triton_mme.sizing.offline_sources import check_sources

FOLDER = {"name": "intent", "source": "checkpoint:checkpoints/intent/", "formats": ["onnx"],
          "max_batch_size": 2, "sequence_length": 16}  # fmt: skip
STATE_DICT = {"name": "vision", "source": "checkpoint:checkpoints/vision.safetensors",
              "architecture": "torchvision:squeezenet1_1", "formats": ["onnx"], "max_batch_size": 2,
              "input_shape": [3, 32, 32]}  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-own")
    (folder,) = write_hf_folders(root / "folders", 1)
    folder.rename(root / "intent")
    (state_dict,) = write_state_dicts(root / "dicts", 1)
    state_dict.rename(root / "vision.safetensors")
    return root


def project(made: Path, tmp_path: Path, entry: dict[str, Any]) -> Path:
    """A catalog folder (tmp_path/catalog) holding copies of the checkpoints and a catalog of `entry`."""
    root = tmp_path / "catalog"
    (root / "checkpoints").mkdir(parents=True)
    shutil.copytree(made / "intent", root / "checkpoints/intent")
    shutil.copy(made / "vision.safetensors", root / "checkpoints/vision.safetensors")
    (root / "models.yaml").write_text(yaml.safe_dump({"models": [entry]}))
    return root / "models.yaml"


def pinned_as_is(catalog_file: Path, entry: dict[str, Any]) -> Path:
    """The catalog with the checkpoint's digest written into the entry, as an older `lock` pinned it: the
    build's own checks are reached without lock or synthesis refusing first."""
    kind = CheckpointKind.HF_FOLDER if "architecture" not in entry else CheckpointKind.STATE_DICT
    path = catalog_file.parent / entry["source"].removeprefix("checkpoint:")
    sha256, _ = local_digest(path, kind)
    catalog_file.write_text(yaml.safe_dump({"models": [{**entry, "sha256": sha256}]}))
    return catalog_file


def refusals(catalog_file: Path, entry: dict[str, Any], tmp_path: Path) -> list[str]:
    """The one-line refusal of `lock`, of synthesis and of the build's fetch of the same checkpoint."""
    messages = []
    for step in (
        lambda: write_lock(catalog_file),
        lambda: check_sources(load_catalog(catalog_file)),
        lambda: fetch_checkpoints(
            list(load_catalog(pinned_as_is(catalog_file, entry)).models),
            catalog_file.parent,
            tmp_path / "out",
        ),
    ):
        with pytest.raises(CatalogError) as error:
            step()
        assert "\n" not in str(error.value)
        messages.append(str(error.value))
    return messages


def _index_outside(folder: Path) -> None:
    """The weights moved out of the catalog's folder, and an index mapping every tensor to them."""
    from safetensors.numpy import load_file

    outside = folder.parents[2] / "somewhere"
    outside.mkdir()
    tensors = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").rename(outside / "x.safetensors")
    weight_map = dict.fromkeys(tensors, "../../../somewhere/x.safetensors")
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map})
    )


def _unnamed_shard(folder: Path) -> None:
    from safetensors.numpy import load_file

    names = list(load_file(folder / "model.safetensors"))
    (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
    shutil.copy(folder / "model-00001-of-00002.safetensors", folder / "model-00002-of-00002.safetensors")
    weight_map = dict.fromkeys(names, "model-00001-of-00002.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


def _decoy_tokenizer(folder: Path) -> None:
    (folder / "tokenizer.json").write_text("[default]\naws_access_key_id = AKIAEXAMPLE\n")


def _tokenizer_of_another_shape(folder: Path) -> None:
    (folder / "tokenizer.json").write_text(json.dumps({"aws_access_key_id": "AKIAEXAMPLE"}))


def _bad_special_tokens(folder: Path) -> None:
    (folder / "special_tokens_map.json").write_text(json.dumps({"pad_token": 5}))


def _tokenizer_file_outside(folder: Path) -> None:
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_file": "/etc/passwd"}))


def _one_of_many_tensors(folder: Path) -> None:
    from safetensors.numpy import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    first = sorted(tensors)[0]
    save_file({first: tensors[first]}, folder / "model.safetensors")


def _config_larger_than_weights(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    config.update(hidden_size=2560, num_hidden_layers=40, intermediate_size=10240, num_attention_heads=32)
    (folder / "config.json").write_text(json.dumps(config))


def _architectures(value: Any) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "architectures": value}))

    return change


def _infinite_hidden_size(folder: Path) -> None:
    text = (folder / "config.json").read_text()
    config = json.loads(text)
    (folder / "config.json").write_text(
        text.replace(f'"hidden_size": {config["hidden_size"]}', '"hidden_size": 1e400')
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            _index_outside,
            "tensor 'classifier.dense.bias' is mapped to '../../../somewhere/x.safetensors'; allowed",
        ),
        (_unnamed_shard, "model-00002-of-00002.safetensors is not named by model.safetensors.index.json"),
        (_decoy_tokenizer, "checkpoints/intent/tokenizer.json: not JSON"),
        (_tokenizer_of_another_shape, "tokenizer.json: not a tokenizer; allowed: a fast tokenizer's"),
        (_bad_special_tokens, "special_tokens_map.json: not a special tokens map"),
        (_tokenizer_file_outside, "'tokenizer_file' names files or code the tokenizer would load"),
        (_one_of_many_tensors, "describes a model of 54,531 parameters but the safetensors weights hold 32"),
        (
            _config_larger_than_weights,
            "describes a model of 3,156,526,083 parameters but the safetensors weights hold 54,531",
        ),
        (_architectures({"RobertaModel": 1}), "architectures is dict"),
        (_architectures(7), "architectures is int '7'; allowed: a list of class names"),
        (_architectures(True), "architectures is bool 'True'"),
        (_infinite_hidden_size, "hidden_size is 'inf'; allowed a whole number 0..1,048,576"),
    ],
)
def test_a_folder_is_exactly_its_pinned_files_at_lock_synth_and_build(
    made: Path, tmp_path: Path, change: Callable[[Path], None], expected: str
) -> None:
    catalog_file = project(made, tmp_path, FOLDER)
    change(catalog_file.parent / "checkpoints/intent")
    for message in refusals(catalog_file, FOLDER, tmp_path):
        assert expected in message and "model 'intent'" in message


def test_the_build_loads_a_folder_strictly(made: Path, tmp_path: Path) -> None:
    """Weights of the config's size whose tensor names are not the model's: from_pretrained would fill the
    model's tensors at random and drop the others; the build refuses."""
    from safetensors.numpy import load_file, save_file

    from triton_mme.model_build.sources import load_model

    catalog_file = project(made, tmp_path, FOLDER)
    weights = catalog_file.parent / "checkpoints/intent/model.safetensors"
    tensors = load_file(weights)
    name = "classifier.out_proj.bias"
    tensors["classifier.renamed.bias"] = tensors.pop(name)
    save_file(tensors, weights)
    write_lock(catalog_file)
    catalog = check_sources(load_catalog(catalog_file))
    (copy,) = fetch_checkpoints(list(catalog.models), catalog.base_dir, tmp_path / "out").values()
    with pytest.raises(CatalogError) as error:
        load_model(catalog.models[0], checkpoint=copy)
    message = str(error.value)
    assert "\n" not in message
    assert (
        "does not load strictly: the model has tensors the weights lack (1, first 'classifier.out_proj.bias')"
        in message
    )


# --- paths resolve inside the catalog's folder -------------------------------------------------------------


def test_a_state_dict_that_links_outside_the_catalogs_folder_is_refused(made: Path, tmp_path: Path) -> None:
    catalog_file = project(made, tmp_path, STATE_DICT)
    linked = catalog_file.parent / "checkpoints/vision.safetensors"
    linked.unlink()
    os.symlink(made / "vision.safetensors", linked)
    for step in (lambda: write_lock(catalog_file), lambda: check_sources(load_catalog(catalog_file))):
        with pytest.raises(CatalogError) as error:
            step()
        assert "\n" not in str(error.value)
        assert "'checkpoints/vision.safetensors' resolves to" in str(error.value)
        assert "outside the catalog's folder" in str(error.value)


def test_a_folder_that_links_outside_the_catalogs_folder_is_refused_and_never_shipped(
    made: Path, tmp_path: Path
) -> None:
    from triton_mme_cdk.catalog_files import shipped_checkpoints

    catalog_file = project(made, tmp_path, FOLDER)
    shutil.rmtree(catalog_file.parent / "checkpoints/intent")
    os.symlink(made / "intent", catalog_file.parent / "checkpoints/intent")
    with pytest.raises(CatalogError, match="outside the catalog's folder"):
        write_lock(catalog_file)
    entry = {**FOLDER, "sha256": "0" * 64}
    catalog_file.write_text(yaml.safe_dump({"models": [entry]}))
    with pytest.raises(CatalogError, match="outside the catalog's folder"):
        shipped_checkpoints(load_catalog(catalog_file), catalog_file)


def test_a_file_of_a_folder_that_is_a_link_is_refused_in_one_line(made: Path, tmp_path: Path) -> None:
    catalog_file = project(made, tmp_path, FOLDER)
    config = catalog_file.parent / "checkpoints/intent/config.json"
    config.rename(config.with_name("elsewhere.json"))
    os.symlink("elsewhere.json", config)
    with pytest.raises(CatalogError) as error:
        write_lock(catalog_file)
    assert "checkpoints/intent/config.json: a symbolic link; allowed: the file itself" in str(error.value)
    assert "\n" not in str(error.value)


def test_a_listed_family_variant_that_links_outside_is_refused(made: Path, tmp_path: Path) -> None:
    catalog_file = project(made, tmp_path, STATE_DICT)
    family = catalog_file.parent / "checkpoints/family"
    family.mkdir()
    os.symlink(made / "vision.safetensors", family / "c0000.safetensors")
    block = {**STATE_DICT, "family": "vision", "variants": "listed",
             "source": "checkpoint:checkpoints/family/{variant}.safetensors"}  # fmt: skip
    del block["name"]
    catalog_file.write_text(yaml.safe_dump({"models": [block]}))
    with pytest.raises(CatalogError) as error:
        write_lock(catalog_file)
    assert "model 'vision-c0000'" in str(error.value) and "outside the catalog's folder" in str(error.value)


@pytest.mark.parametrize("key", ["intent/*/", "intent/a?/", "intent/${aws:username}/"])
def test_an_s3_key_with_iam_wildcards_is_refused(key: str) -> None:
    from triton_mme.catalog import parse_catalog

    entry = {**FOLDER, "source": f"checkpoint:s3://models-bucket/{key}"}
    with pytest.raises(CatalogError) as error:
        parse_catalog({"models": [entry]})
    assert "\n" not in str(error.value)
    assert "are wildcards and variables in the IAM policy" in str(error.value)

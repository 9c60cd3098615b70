"""Own checkpoints as catalog sources: the schema, families, the lock file, and what synthesis refuses (one
line each) before any build: a missing file, a changed checkpoint, a pickle, the wrong architecture, no
tokenizer, an S3 checkpoint nobody locked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.checkpoints import write_hf_folders, write_state_dicts
from triton_mme.catalog import CatalogError, load_catalog, parse_catalog
from triton_mme.catalog.checkpoints import folder_digest, parse_safetensors_header
from triton_mme.catalog.lock import CatalogLock, read_lock
from triton_mme.core.files import file_sha256
from triton_mme.core.formats import Weights
from triton_mme.model_build.cache import cache_key
from triton_mme.model_build.lock import write_lock
from triton_mme.sizing.offline_sources import check_sources
from triton_mme.sizing.state_dict_signatures import architecture_signature, recorded_signatures

VISION = {
    "family": "vision",
    "source": "checkpoint:checkpoints/vision/{variant}.safetensors",
    "architecture": "torchvision:squeezenet1_1",
    "variants": "listed",
    "formats": ["onnx"],
    "max_batch_size": 4,
    "input_shape": [3, 64, 64],
}
INTENT = {
    "family": "intent",
    "source": "checkpoint:checkpoints/intent/{variant}/",
    "variants": "listed",
    "formats": ["onnx"],
    "max_batch_size": 4,
    "sequence_length": 16,
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three SqueezeNet state dicts and two tiny RoBERTa classifier folders, made once."""
    root = tmp_path_factory.mktemp("own")
    write_state_dicts(root / "checkpoints" / "vision", 3)
    write_hf_folders(root / "checkpoints" / "intent", 2)
    return root


def project(checkpoints: Path, tmp_path: Path, *entries: dict[str, Any]) -> Path:
    """A catalog folder holding a copy of the checkpoints and a catalog of `entries` (the two families)."""
    shutil.copytree(checkpoints / "checkpoints", tmp_path / "checkpoints")
    catalog = tmp_path / "models.yaml"
    catalog.write_text(yaml.safe_dump({"models": list(entries or (VISION, INTENT))}))
    return catalog


def one_line(error: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


# --- the schema -----------------------------------------------------------------------------------


def entry(**fields: Any) -> dict[str, Any]:
    return {"name": "own", "formats": ["onnx"], "max_batch_size": 4, **fields}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"source": "checkpoint:ck/model.bin"}, "pickle checkpoint, which runs code when loaded"),
        ({"source": "checkpoint:ck/model.pt", "architecture": "torchvision:resnet18"}, "pickle checkpoint"),
        ({"source": "checkpoint:ck/a.safetensors"}, "needs the model it fits; add architecture"),
        ({"source": "checkpoint:s3://bucket/folder"}, "a prefix ending with '/'"),
        (
            {"source": "checkpoint:ck/", "architecture": "torchvision:resnet18"},
            "must be one .safetensors file",
        ),
        ({"source": "checkpoint:ck/", "weights": "random"}, "brings its own weights; leave weights out"),
        ({"source": "checkpoint:ck/", "sha256": "abc"}, "64 lowercase hex digits"),
        ({"source": "checkpoint:https://example.com/x/"}, "only local paths and s3:// locations"),
        (
            {"source": "torchvision:resnet18", "weights": "random", "architecture": "torchvision:x"},
            "only for",
        ),
        ({"source": "torchvision:resnet18"}, "weights: required for this source"),
    ],
)
def test_a_bad_checkpoint_entry_is_one_line_naming_what_is_allowed(
    fields: dict[str, Any], expected: str
) -> None:
    with pytest.raises(CatalogError) as error:
        parse_catalog({"models": [entry(**fields)]})
    assert expected in one_line(error)
    assert "model 'own'" in str(error.value)


def test_a_checkpoint_entry_has_checkpoint_weights_and_the_kind_its_fields_say() -> None:
    catalog = parse_catalog(
        {"models": [entry(source="checkpoint:a.safetensors", architecture="torchvision:resnet18")]}
    )
    (model,) = catalog.models
    assert model.weights is Weights.CHECKPOINT
    assert model.checkpoint_kind == "state-dict" and model.is_image and model.architecture_id == "resnet18"
    (text,) = parse_catalog({"models": [entry(source="checkpoint:s3://bucket/intent/acme/")]}).models
    assert text.checkpoint_kind == "hf-folder" and not text.is_image
    assert text.checkpoint_location.bucket == "bucket" and text.checkpoint_location.key == "intent/acme/"


# --- families -------------------------------------------------------------------------------------


def test_a_family_with_listed_variants_expands_sorted_into_valid_names(
    checkpoints: Path, tmp_path: Path
) -> None:
    catalog = load_catalog(project(checkpoints, tmp_path))
    names = [m.name for m in catalog.models]
    assert names == ["vision-c0000", "vision-c0001", "vision-c0002", "intent-c0000", "intent-c0001"]
    assert catalog.models[1].source == "checkpoint:checkpoints/vision/c0001.safetensors"
    assert all(m.max_batch_size == 4 for m in catalog.models)


def test_a_family_with_named_variants_needs_no_folder() -> None:
    family = {**INTENT, "source": "checkpoint:s3://models-bucket/intent/{variant}/", "variants": ["b", "a"]}
    catalog = parse_catalog({"models": [family]})
    assert [m.name for m in catalog.models] == ["intent-a", "intent-b"]


@pytest.mark.parametrize(
    ("family", "expected"),
    [
        ({**INTENT, "source": "checkpoint:s3://b/intent/{variant}/"}, "needs the lock file's list"),
        ({**INTENT, "variants": ["Acme.Corp", "b#c", "ok"]}, "2 variant(s) give no valid model name"),
        ({**INTENT, "variants": ["Acme_Corp", "acme-corp"]}, "'Acme_Corp' and 'acme-corp' are both"),
        ({**INTENT, "variants": ["a", "a"]}, "a name is listed twice"),
        ({**INTENT, "source": "checkpoint:checkpoints/intent/"}, "needs one {variant}"),
        ({**INTENT, "source": "checkpoint:ck/x{variant}/"}, "must be a whole file or folder name"),
        ({**INTENT, "name": "x"}, "a family's models are named <family>-<variant>"),
        ({**INTENT, "variants": []}, "a non-empty list of names"),
    ],
)
def test_a_bad_family_is_one_line(family: dict[str, Any], expected: str) -> None:
    with pytest.raises(CatalogError) as error:
        parse_catalog({"models": [family]}, base_dir=Path("/nonexistent"))
    assert expected in one_line(error)


# --- the lock file --------------------------------------------------------------------------------


def test_lock_pins_every_checkpoint_and_synthesis_accepts_the_pinned_catalog(
    checkpoints: Path, tmp_path: Path
) -> None:
    catalog_file = project(checkpoints, tmp_path)
    result = write_lock(catalog_file)
    lock = read_lock(result.path)
    assert lock is not None and result.path.name == "models.lock.yaml"
    assert lock.families == {"intent": ("c0000", "c0001"), "vision": ("c0000", "c0001", "c0002")}
    vision = lock.checkpoints["vision-c0000"]
    assert vision.sha256 == file_sha256(tmp_path / "checkpoints/vision/c0000.safetensors")
    intent_dir = tmp_path / "checkpoints/intent/c0000"
    files = {n: file_sha256(intent_dir / n) for n in ("config.json", "model.safetensors", "tokenizer.json",
                                                     "tokenizer_config.json")}  # fmt: skip
    assert lock.checkpoints["intent-c0000"].sha256 == folder_digest(files)
    assert vision.parameters > 700_000  # SqueezeNet 1.1 with 10 classes
    resolved = check_sources(load_catalog(catalog_file))
    assert all(m.sha256 and m.pin for m in resolved.models)
    assert write_lock(catalog_file, check_only=True).changed == ()


def test_a_changed_checkpoint_changes_one_pin_and_one_cache_key_and_fails_synthesis_until_locked(
    checkpoints: Path, tmp_path: Path
) -> None:
    catalog_file = project(checkpoints, tmp_path)
    write_lock(catalog_file)
    before = {m.name: cache_key(m, m.formats[0]) for m in load_catalog(catalog_file).models}
    shutil.copy(
        tmp_path / "checkpoints/vision/c0002.safetensors", tmp_path / "checkpoints/vision/c0001.safetensors"
    )
    with pytest.raises(CatalogError) as error:
        check_sources(load_catalog(catalog_file))
    assert "model 'vision-c0001'" in one_line(error) and "the pin says" in str(error.value)
    assert write_lock(catalog_file, check_only=True).changed == ("vision-c0001",)
    write_lock(catalog_file)
    after = {m.name: cache_key(m, m.formats[0]) for m in check_sources(load_catalog(catalog_file)).models}
    assert [name for name in before if before[name] != after[name]] == ["vision-c0001"]


def test_a_new_folder_in_a_locked_family_stops_synthesis_until_locked(
    checkpoints: Path, tmp_path: Path
) -> None:
    catalog_file = project(checkpoints, tmp_path)
    write_lock(catalog_file)
    shutil.copytree(tmp_path / "checkpoints/intent/c0000", tmp_path / "checkpoints/intent/c0009")
    with pytest.raises(CatalogError) as error:
        load_catalog(catalog_file)
    assert "new: c0009" in one_line(error) and "run `triton-mme lock`" in str(error.value)


def test_the_lock_file_is_sorted_and_stable(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path)
    first = write_lock(catalog_file).path.read_text()
    assert write_lock(catalog_file).path.read_text() == first
    names = list(yaml.safe_load(first)["checkpoints"])
    assert names == sorted(names)
    assert CatalogLock.model_validate(yaml.safe_load(first)).to_yaml() == first


# --- what synthesis refuses -----------------------------------------------------------------------


def pinned(checkpoints: Path, tmp_path: Path, *entries: dict[str, Any]) -> Path:
    catalog_file = project(checkpoints, tmp_path, *entries)
    write_lock(catalog_file)
    return catalog_file


def single(**fields: Any) -> dict[str, Any]:
    return {"name": "own", "formats": ["onnx"], "max_batch_size": 4, "input_shape": [3, 64, 64], **fields}


def test_a_missing_file_is_one_line(checkpoints: Path, tmp_path: Path) -> None:
    state_dict = single(source="checkpoint:checkpoints/vision/gone.safetensors",
                        architecture="torchvision:squeezenet1_1", sha256="0" * 64)  # fmt: skip
    catalog_file = project(checkpoints, tmp_path, state_dict)
    with pytest.raises(CatalogError) as error:
        check_sources(load_catalog(catalog_file))
    assert one_line(error).endswith("gone.safetensors: no such file")


def test_an_unpinned_checkpoint_names_its_digest(checkpoints: Path, tmp_path: Path) -> None:
    state_dict = single(source="checkpoint:checkpoints/vision/c0000.safetensors",
                        architecture="torchvision:squeezenet1_1")  # fmt: skip
    catalog_file = project(checkpoints, tmp_path, state_dict)
    with pytest.raises(CatalogError) as error:
        check_sources(load_catalog(catalog_file))
    digest = file_sha256(tmp_path / "checkpoints/vision/c0000.safetensors")
    assert (
        f"not pinned; run `triton-mme lock` (writes models.lock.yaml), or add sha256: {digest}"
        in one_line(error)
    )


def test_a_state_dict_of_another_architecture_is_refused(checkpoints: Path, tmp_path: Path) -> None:
    state_dict = single(
        source="checkpoint:checkpoints/vision/c0000.safetensors", architecture="torchvision:resnet18"
    )
    catalog_file = project(checkpoints, tmp_path, state_dict)
    with pytest.raises(CatalogError) as error:
        write_lock(catalog_file)
    assert "is not a state dict of torchvision:resnet18: it has no 'fc.bias'" in one_line(error)


def test_a_state_dict_with_a_changed_body_is_refused(checkpoints: Path, tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    state_dict = single(source="checkpoint:checkpoints/vision/c0000.safetensors",
                        architecture="torchvision:squeezenet1_1")  # fmt: skip
    catalog_file = project(checkpoints, tmp_path, state_dict)
    path = tmp_path / "checkpoints/vision/c0000.safetensors"
    tensors = load_file(path)
    del tensors["features.0.bias"]
    save_file(tensors, path)
    with pytest.raises(CatalogError) as error:
        write_lock(catalog_file)
    assert "names or shapes differ from that architecture's" in one_line(error)


def test_a_folder_with_only_pickle_weights_is_refused(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path, {**INTENT, "variants": ["c0000"]})
    folder = tmp_path / "checkpoints/intent/c0000"
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(CatalogError) as error:
        write_lock(catalog_file)
    assert "found pytorch_model.bin, a pickle checkpoint, which runs code when loaded" in one_line(error)


def test_a_folder_without_a_fast_tokenizer_is_refused(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path, {**INTENT, "variants": ["c0001"]})
    (tmp_path / "checkpoints/intent/c0001/tokenizer.json").unlink()
    with pytest.raises(CatalogError) as error:
        write_lock(catalog_file)
    assert "no tokenizer.json" in one_line(error)


def test_a_folder_of_an_unbuilt_model_type_is_refused(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path, {**INTENT, "variants": ["c0000"]})
    config = tmp_path / "checkpoints/intent/c0000/config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "model_type": "gpt2"}))
    with pytest.raises(CatalogError) as error:
        write_lock(catalog_file)
    assert "model_type 'gpt2' is not built from a checkpoint; allowed: bert, roberta" in one_line(error)


def test_an_s3_checkpoint_must_be_locked(tmp_path: Path) -> None:
    catalog = parse_catalog({"models": [entry(source="checkpoint:s3://models-bucket/intent/acme/",
                                              sequence_length=16)]}, base_dir=tmp_path)  # fmt: skip
    with pytest.raises(CatalogError) as error:
        check_sources(catalog)
    assert "an S3 checkpoint must be in the lock file" in one_line(error)


def test_a_file_that_is_not_safetensors_is_refused() -> None:
    with pytest.raises(ValueError, match="not a safetensors file"):
        parse_safetensors_header(b"\xff" * 16, where="x.safetensors", file_size=16)
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
    blob = len(header).to_bytes(8, "little") + header
    with pytest.raises(ValueError, match="no valid dtype, shape and byte range"):
        parse_safetensors_header(blob, where="x.safetensors", file_size=len(blob) + 8)


# --- the recorded architectures -------------------------------------------------------------------


@pytest.mark.parametrize("architecture", ["squeezenet1_1", "resnet18", "mobilenet_v3_small", "vit_b_16"])
def test_recorded_state_dict_signatures_match_the_installed_torchvision(architecture: str) -> None:
    assert recorded_signatures()[architecture] == json.loads(json.dumps(architecture_signature(architecture)))


def test_every_classification_architecture_is_recorded() -> None:
    import torchvision

    assert set(recorded_signatures()) == set(torchvision.models.list_models(module=torchvision.models))

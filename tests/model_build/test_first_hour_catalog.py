"""A team's first hour with its own fine-tunes (issue 42), the catalog side: one pin per checkpoint, what the
files already show refused at lock and synth (not on the runner), file names normalised into model names."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.checkpoints import write_hf_folders, write_state_dicts
from triton_mme.catalog import CatalogError, load_catalog
from triton_mme.catalog.checkpoints import TensorHeader
from triton_mme.catalog.lock import read_lock
from triton_mme.cli import main
from triton_mme.core.files import file_sha256
from triton_mme.model_build.lock import write_lock
from triton_mme.sizing.checkpoint_contract import _vit_image_size, config_labels
from triton_mme.sizing.offline_sources import check_sources

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
    "name": "intent",
    "source": "checkpoint:checkpoints/intent/c0000/",
    "formats": ["onnx"],
    "max_batch_size": 4,
    "sequence_length": 16,
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("own")
    write_state_dicts(root / "checkpoints" / "vision", 2)
    write_hf_folders(root / "checkpoints" / "intent", 1)
    return root


def project(checkpoints: Path, tmp_path: Path, *entries: dict[str, Any]) -> Path:
    shutil.copytree(checkpoints / "checkpoints", tmp_path / "checkpoints")
    catalog = tmp_path / "models.yaml"
    catalog.write_text(yaml.safe_dump({"models": list(entries)}))
    return catalog


def refusal(catalog_file: Path) -> str:
    """The one line lock gives, which synthesis gives too."""
    with pytest.raises(CatalogError) as error:
        write_lock(catalog_file)
    message = str(error.value)
    assert "\n" not in message
    return message


# --- 1. one source of truth per pin ------------------------------------------------------------------------


def test_a_wrong_sha256_in_the_catalog_fails_lock_and_its_check_naming_the_line_to_delete(
    checkpoints: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog_file = project(checkpoints, tmp_path, {**INTENT, "sha256": "a" * 64})
    message = refusal(catalog_file)
    assert (
        "model 'intent': sha256: aaaaaaaaaaaaaaaa… in the catalog is not its checkpoint's content" in message
    )
    assert "delete that sha256: line" in message
    assert not (tmp_path / "models.lock.yaml").exists()
    assert main(["lock", "--catalog", str(catalog_file), "--check"]) == 1
    assert "delete that sha256: line" in capsys.readouterr().err
    # The edit it names resolves it: lock pins the checkpoint, check and synthesis agree.
    catalog_file.write_text(yaml.safe_dump({"models": [INTENT]}))
    write_lock(catalog_file)
    assert write_lock(catalog_file, check_only=True).changed == ()
    assert check_sources(load_catalog(catalog_file)).models[0].sha256


def test_a_catalog_pin_edited_after_lock_names_the_line_to_delete(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path, INTENT)
    write_lock(catalog_file)
    catalog_file.write_text(yaml.safe_dump({"models": [{**INTENT, "sha256": "b" * 64}]}))
    with pytest.raises(CatalogError, match="allowed: one pin: delete that sha256: line"):
        load_catalog(catalog_file)
    assert main(["lock", "--catalog", str(catalog_file), "--check"]) == 1


def test_a_catalog_pin_equal_to_the_content_is_accepted(checkpoints: Path, tmp_path: Path) -> None:
    digest = file_sha256(checkpoints / "checkpoints/vision/c0000.safetensors")
    own = {**VISION, "variants": ["c0000"], "sha256": digest}
    catalog_file = project(checkpoints, tmp_path, own)
    assert write_lock(catalog_file).lock.checkpoints["vision-c0000"].sha256 == digest


# --- 2. what the files already show ------------------------------------------------------------------------


def test_a_sequence_length_beyond_the_positions_is_refused_at_lock_and_synth(
    checkpoints: Path, tmp_path: Path
) -> None:
    catalog_file = project(checkpoints, tmp_path, {**INTENT, "sequence_length": 512})
    message = refusal(catalog_file)
    assert message.endswith(
        "sequence_length 512 is more than its config.json allows (max_position_embeddings 130: 128 tokens "
        "for roberta); allowed 1..128"
    )
    catalog_file.write_text(
        yaml.safe_dump({"models": [{**INTENT, "sha256": "c" * 64, "sequence_length": 512}]})
    )
    with pytest.raises(CatalogError, match="sequence_length 512 is more than"):
        check_sources(load_catalog(catalog_file))


def test_an_input_shape_the_architecture_cannot_take_is_refused(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path, {**VISION, "input_shape": [1, 64, 64]})
    assert (
        "input_shape [1, 64, 64] does not fit torchvision:squeezenet1_1, which takes [3, height, width]"
        in (refusal(catalog_file))
    )


def test_a_vit_state_dict_states_its_image_size() -> None:
    tensors = {
        "conv_proj.weight": TensorHeader("F32", (768, 3, 16, 16)),
        "encoder.pos_embedding": TensorHeader("F32", (1, 197, 768)),
    }
    assert _vit_image_size(tensors) == 224
    assert _vit_image_size({"conv1.weight": TensorHeader("F32", (64, 3, 7, 7))}) is None


def test_class_names_must_match_the_head(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path, {**VISION, "labels": ["ok", "defect"]})
    assert "labels names 2 classes, the state dict's head has 10; allowed: 10 names" in refusal(catalog_file)
    folder = tmp_path / "checkpoints/intent/c0000"
    config = json.loads((folder / "config.json").read_text())
    config["id2label"] = {"0": "billing", "1": "refund"}
    (folder / "config.json").write_text(json.dumps(config))
    catalog_file.write_text(yaml.safe_dump({"models": [INTENT]}))
    assert "config.json id2label names 2 classes, its classifier head has 3" in refusal(catalog_file)


def test_a_labels_file_is_read_and_shipped(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path, {**VISION, "labels": "classes.txt"})
    (tmp_path / "classes.txt").write_text("".join(f"class-{i}\n" for i in range(10)))
    write_lock(catalog_file)
    catalog = check_sources(load_catalog(catalog_file))
    assert catalog.models[0].labels == tuple(f"class-{i}" for i in range(10))
    assert catalog.label_files == {"vision-c0000": "classes.txt", "vision-c0001": "classes.txt"}
    (tmp_path / "classes.txt").write_text("just one\n")
    with pytest.raises(CatalogError, match="labels names 1 classes"):
        check_sources(load_catalog(catalog_file))


def test_a_tokenizer_with_ids_beyond_the_vocabulary_is_refused(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path, INTENT)
    folder = tmp_path / "checkpoints/intent/c0000"
    config = json.loads((folder / "config.json").read_text())
    config["vocab_size"] = 100
    (folder / "config.json").write_text(json.dumps(config))
    message = refusal(catalog_file)
    assert "tokenizer.json (BPE tokenizer) gives token ids up to" in message
    assert "roberta model has vocab_size 100" in message


def test_id2label_in_index_order() -> None:
    assert config_labels({"id2label": {"1": "b", "0": "a"}}) == ["a", "b"]
    assert config_labels({"id2label": {"0": "a", "2": "c"}}) is None
    assert config_labels({}) is None


# --- 5. file names that are not model names ----------------------------------------------------------------


def test_file_names_become_normalised_model_names_recorded_in_the_lock(
    checkpoints: Path, tmp_path: Path
) -> None:
    catalog_file = project(checkpoints, tmp_path, VISION)
    vision = tmp_path / "checkpoints/vision"
    (vision / "c0000.safetensors").rename(vision / "Plant_A.safetensors")
    (vision / "c0001.safetensors").rename(vision / "Line 41.safetensors")
    lock = write_lock(catalog_file).lock
    assert lock.checkpoints["vision-plant-a"].source == "checkpoint:checkpoints/vision/Plant_A.safetensors"
    assert lock.checkpoints["vision-line-41"].source == "checkpoint:checkpoints/vision/Line 41.safetensors"
    assert [m.name for m in check_sources(load_catalog(catalog_file)).models] == [
        "vision-line-41",
        "vision-plant-a",
    ]
    assert read_lock(tmp_path / "models.lock.yaml") == lock


def test_colliding_and_invalid_file_names_are_all_reported_at_once(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path, VISION)
    vision = tmp_path / "checkpoints/vision"
    shutil.copy(vision / "c0000.safetensors", vision / "Plant_A.safetensors")
    shutil.copy(vision / "c0000.safetensors", vision / "plant-a.safetensors")
    assert "'Plant_A' and 'plant-a' are both vision-plant-a" in refusal(catalog_file)
    (vision / "plant-a.safetensors").unlink()
    shutil.copy(vision / "c0000.safetensors", vision / "bad.name.safetensors")
    shutil.copy(vision / "c0000.safetensors", vision / "café.safetensors")
    message = refusal(catalog_file)
    assert "2 variant(s) give no valid model name" in message
    assert "'bad.name'" in message and "'café'" in message


# --- 7. hints that point the right way ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({**VISION, "variants": ["a"], "max_batch_sise": 4},
         "max_batch_sise: unknown field; did you mean max_batch_size?"),
        ({"famly": "v", "source": "checkpoint:s3://b/{variant}.onnx", "formats": ["onnx"],
          "max_batch_size": 4},
         "famly: unknown field; did you mean family?"),
        ({**INTENT, "dynamic_batching": {"enabeld": True}},
         "dynamic_batching.enabeld: unknown field; did you mean enabled?"),
    ],
)  # fmt: skip
def test_a_misspelt_key_is_named_with_the_key_it_meant(entry: dict[str, Any], expected: str) -> None:
    from triton_mme.catalog import parse_catalog

    with pytest.raises(CatalogError) as error:
        parse_catalog({"models": [entry]})
    assert expected in str(error.value) and "required field is missing" not in str(error.value)


def test_a_misspelt_architecture_and_model_name_get_a_did_you_mean(checkpoints: Path, tmp_path: Path) -> None:
    catalog_file = project(checkpoints, tmp_path, {**VISION, "architecture": "torchvision:squeezenet1.1"})
    assert "did you mean squeezenet1_1?" in refusal(catalog_file)
    catalog_file.write_text(yaml.safe_dump({"models": [VISION]}))
    write_lock(catalog_file)
    with pytest.raises(CatalogError, match=re.escape("did you mean vision-c0001?")):
        load_catalog(catalog_file).subset(["vision-c001"])


# --- 9. one family member served on its own ----------------------------------------------------------------


def test_a_family_member_can_be_dedicated_by_an_override_keyed_by_its_variant(
    checkpoints: Path, tmp_path: Path
) -> None:
    overrides = {"c0001": {"placement": "dedicated", "dedicated": {"copies": 2}}}
    catalog_file = project(checkpoints, tmp_path, {**VISION, "overrides": overrides})
    write_lock(catalog_file)
    by_name = {m.name: m for m in load_catalog(catalog_file).models}
    assert by_name["vision-c0000"].placement == "mme"
    assert by_name["vision-c0001"].placement == "dedicated" and by_name["vision-c0001"].dedicated.copies == 2
    catalog_file.write_text(
        yaml.safe_dump({"models": [{**VISION, "overrides": {"c0011": {"placement": "mme"}}}]})
    )
    with pytest.raises(CatalogError, match=re.escape("overrides: no variant 'c0011'; did you mean c0001?")):
        load_catalog(catalog_file)


def test_a_changed_checkpoint_pinned_in_the_catalog_names_that_line(
    checkpoints: Path, tmp_path: Path
) -> None:
    digest = file_sha256(checkpoints / "checkpoints/vision/c0000.safetensors")
    own = {**VISION, "variants": ["c0000"], "sha256": digest}
    catalog_file = project(checkpoints, tmp_path, own)
    shutil.copy(
        tmp_path / "checkpoints/vision/c0001.safetensors", tmp_path / "checkpoints/vision/c0000.safetensors"
    )
    with pytest.raises(CatalogError, match="delete the entry's sha256: line and run `triton-mme lock`"):
        check_sources(load_catalog(catalog_file))

"""The platform mirror's checks that need no server: archive names, unpacking, the budget."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from tiny_archives import BuiltArchive

from triton_mme.local_triton.loader import ModelCache, ModelError, SageMakerApi, unpack


def _cache(models_dir: Path, scratch: Path, budget: int = 1) -> ModelCache:
    return ModelCache(models_dir=models_dir, scratch_dir=scratch, api=SageMakerApi(1), budget=budget)


def test_unpack_gives_the_model_directory(
    built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path
) -> None:
    archives = built[1]
    model_dir = unpack(archives["tiny-cnn/onnx"].path, tmp_path / "model")
    assert model_dir == tmp_path / "model" / "tiny-cnn-onnx"
    assert (model_dir / "config.pbtxt").is_file() and (model_dir / "1" / "model.onnx").is_file()


def test_an_archive_with_two_model_directories_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    archive = tmp_path / "two-onnx-0000000000000000.tar.gz"
    for name in ("a/config.pbtxt", "b/config.pbtxt"):
        (tmp_path / name).parent.mkdir()
        (tmp_path / name).write_text('platform: "onnxruntime_onnx"')
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "a", "a")
        tar.add(tmp_path / "b", "b")
    with pytest.raises(
        ModelError, match=r"^two-onnx-0000000000000000\.tar\.gz: found .*expected exactly"
    ) as error:
        unpack(archive, tmp_path / "out" / "model")
    assert error.value.status == 400
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("target", ["../models/x.tar.gz", "missing.tar.gz", "manifest.json"])
def test_only_archives_inside_the_build_directory_are_target_models(
    built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path, target: str
) -> None:
    models_dir, archives = built
    with pytest.raises(
        ModelError, match=f"no archive '{target}' in .*; known: .*{archives['tiny-cnn/onnx'].target_model}"
    ):
        _cache(models_dir, tmp_path).archive_for(target)


def test_a_budget_below_one_is_refused(built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="model budget: 0 is not allowed; at least 1"):
        _cache(built[0], tmp_path, budget=0)

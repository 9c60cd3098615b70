"""The platform mirror's checks that need no server: archive names, unpacking, the budget."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest
from hostile_archives import write_bomb
from tiny_archives import BuiltArchive

from triton_mme.client.triton_routes import SageMakerRoutes
from triton_mme.local_triton.loader import ModelCache, ModelError, unpack


def _cache(models_dir: Path, scratch: Path, budget: int = 1) -> ModelCache:
    return ModelCache(
        models_dir=models_dir, scratch_dir=scratch, routes=SageMakerRoutes.at_port(1), budget=budget
    )


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


@pytest.mark.parametrize(
    "target",
    [
        "../models/tiny-cnn-onnx-0000000000000000.tar.gz",
        "tiny-cnn-onnx-0000000000000000.tar.gz\n",
        "manifest.json",
        "x.tgz",
        "My Model (final) v2\u202e.tar.gz",
        "a" * 300 + "-onnx-0000000000000000.tar.gz",
    ],
)
def test_a_target_model_outside_the_naming_rule_is_400(
    built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path, target: str
) -> None:
    with pytest.raises(ModelError) as caught:
        _cache(built[0], tmp_path).archive_for(target)
    assert caught.value.status == 400
    message = str(caught.value)
    assert message.startswith("TargetModel ") and "is not an archive name; allowed <model name>-" in message
    assert "\n" not in message and "\u202e" not in message


def test_a_well_named_target_model_without_its_archive_is_404(
    built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path
) -> None:
    models_dir, archives = built
    with pytest.raises(ModelError) as caught:
        _cache(models_dir, tmp_path).archive_for("absent-onnx-0000000000000000.tar.gz")
    assert caught.value.status == 404
    assert str(caught.value).startswith(f"no archive 'absent-onnx-0000000000000000.tar.gz' in {models_dir}")
    # Only files named by the rule are offered: not manifest.json, companions or the build cache.
    message = str(caught.value)
    known = re.split(r"(?:known|closest|first): ", message)[-1].split(", ")
    assert all(name.endswith(".tar.gz") and "manifest" not in name for name in known)
    assert archives["tiny-cnn/onnx"].target_model in known or f"{len(archives)} known; first: " in message


def test_a_budget_below_one_is_refused(built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="model budget: 0 is not allowed; at least 1"):
        _cache(built[0], tmp_path, budget=0)


def test_an_archive_past_the_unpacked_size_limit_is_400_and_leaves_nothing(tmp_path: Path) -> None:
    archive = tmp_path / "bomb-onnx-0000000000000000.tar.gz"
    write_bomb(archive, model_bytes=64 * 1024 * 1024)
    with pytest.raises(ModelError, match=r"unpacks to more than 1,048,576 bytes") as caught:
        unpack(archive, tmp_path / "out" / "model", max_unpacked_bytes=1024 * 1024)
    assert caught.value.status == 400
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []

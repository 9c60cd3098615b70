"""Fixtures of the local Triton tests: a copy of the session's tiny build, plus hand-made archives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tiny_archives import BuiltArchive, mismatched_archive, renamed_archive, tensorrt_archive

from triton_mme.core.manifest import ArchiveRecord, Manifest


@pytest.fixture(scope="session")
def built(
    tmp_path_factory: pytest.TempPathFactory, tiny_build: tuple[Path, Manifest]
) -> tuple[Path, dict[str, BuiltArchive]]:
    """Archives keyed "<name>/<format>": tiny models in onnx and torchscript, tensorrt, copy, mismatched.

    The session's build is copied, so the archives added here never show up in other packages' tests."""
    out = tmp_path_factory.mktemp("models")
    shared_dir, manifest = tiny_build
    shutil.copytree(shared_dir, out, dirs_exist_ok=True)
    archives = {f"{r.name}/{r.format}": BuiltArchive(r, out / r.target_model) for r in manifest.archives}
    cnn = archives["tiny-cnn/onnx"]
    plan = tensorrt_archive(out, cnn.record, tmp_path_factory.mktemp("plan"))
    archives["tiny-cnn/tensorrt"] = BuiltArchive(
        cnn.record.model_copy(update={"format": "tensorrt", "target_model": plan.name}), plan
    )
    broken = mismatched_archive(out, cnn.path, tmp_path_factory.mktemp("mismatched"))
    archives["mismatched/onnx"] = BuiltArchive(
        cnn.record.model_copy(update={"target_model": broken.name}), broken
    )
    copied = renamed_archive(out, cnn.path, tmp_path_factory.mktemp("copy"), name="copy")
    copy: ArchiveRecord = cnn.record.model_copy(update={"name": "copy", "target_model": copied.name})
    archives["copy/onnx"] = BuiltArchive(copy, copied)
    return out, archives

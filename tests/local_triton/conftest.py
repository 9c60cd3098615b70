"""Fixtures of the local Triton tests: one build directory, built by the project's build code, per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_archives import TINY_CATALOG, BuiltArchive, mismatched_archive, renamed_archive, tensorrt_archive

from triton_mme.core.catalog import parse_catalog
from triton_mme.core.manifest import ArchiveRecord
from triton_mme.model_build.pipeline import build_catalog


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, BuiltArchive]]:
    """Archives keyed "<name>/<format>": tiny models in onnx and torchscript, tensorrt, copy, mismatched."""
    out = tmp_path_factory.mktemp("models")
    manifest = build_catalog(parse_catalog(TINY_CATALOG), out, progress=False)
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

"""Build directories for the serving check: one archive of a real tiny build, changed the way real archives
go wrong (a config that contradicts its graph, a truncated model file, golden outputs that do not match)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.archive_inspection.archive import extract_archive
from triton_mme.core.files import file_sha256, write_atomically
from triton_mme.core.formats import Format
from triton_mme.core.golden import GoldenData
from triton_mme.core.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest
from triton_mme.core.naming import GOLDEN_ROLE, companion_file_name
from triton_mme.core.triton_config import render_config
from triton_mme.model_build.packaging import write_archive

ConfigChange = Callable[[pb.ModelConfig], None]
GoldenChange = Callable[[GoldenData], GoldenData]


def one_archive_build(
    built: tuple[Path, Manifest],
    name: str,
    fmt: str,
    out: Path,
    *,
    config_change: ConfigChange | None = None,
    truncate_model: bool = False,
    golden_change: GoldenChange | None = None,
) -> tuple[Path, ArchiveRecord]:
    """A build directory holding one archive of `built` (changed as asked) with its files and a manifest."""
    source_dir, manifest = built
    record = manifest.find(name, fmt)
    out.mkdir(parents=True, exist_ok=True)
    files = dict(record.files)
    for role, file_name in record.files.items():
        if role != GOLDEN_ROLE or golden_change is None:
            shutil.copyfile(source_dir / file_name, out / file_name)
    if golden_change is not None:
        golden = golden_change(
            GoldenData.from_bytes((source_dir / files[GOLDEN_ROLE]).read_bytes(), where="g")
        )
        content = golden.to_bytes()
        files[GOLDEN_ROLE] = companion_file_name(GOLDEN_ROLE, hashlib.sha256(content).hexdigest())
        write_atomically(out / files[GOLDEN_ROLE], content)
    archive = source_dir / record.target_model
    if config_change is not None or truncate_model:
        extracted = extract_archive(archive, out / ".unpacked")
        config = extracted.contents.config
        if config_change is not None:
            config_change(config)
        model_file = extracted.model_file
        if truncate_model:
            data = model_file.read_bytes()
            model_file.write_bytes(data[: len(data) // 2])
        packed = write_archive(
            out,
            name=record.name,
            fmt=Format(fmt),
            model_dir=extracted.model_dir.name,
            config_text=render_config(config),
            model_file=model_file,
            model_file_name=model_file.name,
        )
        shutil.rmtree(out / ".unpacked")
        archive = packed.path
    else:
        shutil.copyfile(archive, out / archive.name)
    changed = record.model_copy(
        update={
            "target_model": archive.name,
            "sha256": file_sha256(out / archive.name),
            "size_bytes": (out / archive.name).stat().st_size,
            "files": files,
        }
    )
    write_atomically(out / MANIFEST_FILE_NAME, Manifest(archives=(changed,)).to_json())
    return out, changed


def output_declared_fp16(config: pb.ModelConfig) -> None:
    """The config says FP16 where the graph computes float: Triton's ONNX backend refuses to load it."""
    config.output[0].data_type = pb.TYPE_FP16


def outputs_shifted(golden: GoldenData) -> GoldenData:
    """Reference outputs that are not what the model computes (by 1.0 everywhere)."""
    return GoldenData(dict(golden.inputs), {k: (v + np.float32(1.0)) for k, v in golden.outputs.items()})

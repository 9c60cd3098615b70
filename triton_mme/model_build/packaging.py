"""Reproducible archives: the same config and model bytes always give the same .tar.gz bytes."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from triton_mme.core.files import file_sha256
from triton_mme.core.formats import Format
from triton_mme.core.naming import MODEL_VERSION, archive_file_name

# Weights barely compress (ResNet-50: 3 %), but inflating them costs time on every cold load of an
# archive in a multi-model endpoint: stored deflate blocks unpack at copy speed.
GZIP_LEVEL = 0
ARCHIVE_FILE_MODE = 0o644


@dataclass(frozen=True)
class PackedArchive:
    path: Path
    sha256: str
    size_bytes: int


def _normalised(info: tarfile.TarInfo, *, is_dir: bool) -> tarfile.TarInfo:
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o755 if is_dir else 0o644
    return info


def _directory(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return _normalised(info, is_dir=True)


def write_archive(
    out_dir: Path,
    *,
    name: str,
    fmt: Format,
    model_dir: str,
    config_text: str,
    model_file: Path,
    model_file_name: str,
) -> PackedArchive:
    """Write `<model_dir>/config.pbtxt` and `<model_dir>/1/<model_file_name>` into an archive in out_dir.

    Entries are in a fixed order with fixed owners, modes and times, and the gzip header carries
    neither a file name nor a timestamp. The archive is named after its own sha256 and appears in
    out_dir only when complete.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    config_bytes = config_text.encode("utf-8")
    fd, temp_name = tempfile.mkstemp(prefix=".partial-", suffix=".tar.gz", dir=out_dir)
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=GZIP_LEVEL) as zipped,
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            tar.addfile(_directory(model_dir))
            config_info = _normalised(tarfile.TarInfo(f"{model_dir}/config.pbtxt"), is_dir=False)
            config_info.size = len(config_bytes)
            tar.addfile(config_info, io.BytesIO(config_bytes))
            tar.addfile(_directory(f"{model_dir}/{MODEL_VERSION}"))
            model_info = _normalised(
                tarfile.TarInfo(f"{model_dir}/{MODEL_VERSION}/{model_file_name}"), is_dir=False
            )
            model_info.size = model_file.stat().st_size
            with model_file.open("rb") as model_stream:
                tar.addfile(model_info, model_stream)
        temp_path = Path(temp_name)
        digest = file_sha256(temp_path)
        destination = out_dir / archive_file_name(name, fmt, digest)
        os.chmod(temp_path, ARCHIVE_FILE_MODE)
        packed = PackedArchive(destination, digest, temp_path.stat().st_size)
        os.replace(temp_path, destination)
        return packed
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise

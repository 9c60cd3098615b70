"""Read and extract model archives (`<dir>/config.pbtxt` + `<dir>/1/model.<ext>`) without running them.

The readers of the package's entry (model_check.inspect_archive), which other packages call instead:
- read_archive(path) -> ArchiveContents: layout and parsed config, without unpacking the model.
- extract_archive(path, dest) -> ExtractedArchive: the same checks, then the unpacked model directory.
- check_outputs(...): produced outputs against the config's names, datatypes and dims (the build's run).
Running a model (ONNX Runtime, TorchScript) is the build's job: `triton_mme.model_build.verify`.

Both readers read the archive twice from one open file: first with the strict block scanner
(tar_blocks: intact ustar headers of files and directories only, no name twice, nothing after the
end), then with tarfile, whose list of entries must be the scanner's exactly. They apply the archive
policy (archive_policy: only the fields, parameters and names the build itself writes), and they
bound what an archive may unpack to (`max_unpacked_bytes`, default
limits.DEFAULT_MAX_UNPACKED_BYTES) from the sizes its headers declare, before any byte is written, and
extract_archive unpacks exactly the members it checked from the same open file: nothing can change
between the check and the extraction. With `hashed`, the sha256 a name or a record is held to is taken from
that open file too, before it is read (`ArchiveContents.sha256`). Every problem is an ArchiveError with a
one-line message.
"""

from __future__ import annotations

import hashlib
import posixpath
import tarfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

import numpy as np
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.archive_inspection.archive_policy import PolicyError, check_config
from triton_mme.archive_inspection.config_bounds import config_problem
from triton_mme.archive_inspection.tar_blocks import TarEntry, TarFormatError, same_view, scan_entries
from triton_mme.core.errors import UserError, first_line, quoted
from triton_mme.core.formats import Format
from triton_mme.core.limits import DEFAULT_MAX_UNPACKED_BYTES, MAX_ARCHIVE_MEMBERS, MAX_CONFIG_BYTES
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.naming import MODEL_DIRECTORY, MODEL_VERSION, PLATFORMS, format_of_model_file
from triton_mme.core.samples import NUMPY_DTYPES
from triton_mme.core.triton_config import ConfigError, parse_config, tensor_specs

CONFIG_FILE_NAME = "config.pbtxt"
EXPECTED_LAYOUT = "exactly '<dir>/config.pbtxt' and '<dir>/1/model.<onnx|pt|plan>'"


class ArchiveError(UserError, ValueError):
    """An archive that Triton would not load as built; the message is one line."""


@dataclass(frozen=True)
class ArchiveContents:
    path: Path
    model_dir: str
    config: pb.ModelConfig
    format: Format
    model_member: str  # path inside the archive, e.g. "resnet50-onnx/1/model.onnx"
    model_file_name: str  # e.g. "model.onnx"
    model_size: int
    sha256: str | None = None  # the file's, from the open file that was read (hashed=True)

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return tensor_specs(self.config.input)

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return tensor_specs(self.config.output)


@dataclass(frozen=True)
class ExtractedArchive:
    """A checked archive unpacked under a destination directory."""

    contents: ArchiveContents
    model_dir: Path  # <dest>/<contents.model_dir>

    @property
    def model_file(self) -> Path:
        return self.model_dir / MODEL_VERSION / self.contents.model_file_name


def _unsafe(name: str) -> bool:
    path = PurePosixPath(name)
    return path.is_absolute() or ".." in path.parts or posixpath.normpath(name) != name.rstrip("/")


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Any failure to read the compressed tar stream as one line naming the archive."""
    try:
        yield
    except (OSError, tarfile.TarError, EOFError, zlib.error, UnicodeDecodeError) as error:
        raise ArchiveError(f"{path.name}: not a readable .tar.gz archive ({first_line(error)})") from None


def _checked_entries(path: Path, raw: BinaryIO, max_unpacked_bytes: int) -> list[TarEntry]:
    """Every entry, read header by header by the strict scanner (tar_blocks): the first one past a
    bound stops the reading, so a compressed bomb is refused before its data is inflated."""
    entries: list[TarEntry] = []
    total = 0
    try:
        for entry in scan_entries(raw, path.name):
            entries.append(entry)
            if len(entries) > MAX_ARCHIVE_MEMBERS:
                raise ArchiveError(
                    f"{path.name}: more than {MAX_ARCHIVE_MEMBERS} entries; expected {EXPECTED_LAYOUT}"
                )
            if _unsafe(entry.name):
                raise ArchiveError(
                    f"{path.name}: unsafe entry path {quoted(entry.name)} (absolute or with '..')"
                )
            total += entry.size
            if total > max_unpacked_bytes:
                raise ArchiveError(
                    f"{path.name}: unpacks to more than {max_unpacked_bytes:,} bytes ({quoted(entry.name)} "
                    f"alone is {entry.size:,}); allowed at most {max_unpacked_bytes:,} (--max-unpacked-mib)"
                )
    except TarFormatError as error:
        raise ArchiveError(str(error)) from None
    return entries


def _members(path: Path, tar: tarfile.TarFile, scanned: list[TarEntry]) -> list[tarfile.TarInfo]:
    """tarfile's own list of the entries, which must be the scanner's: one view of the archive."""
    members: list[tarfile.TarInfo] = []
    for member in tar:
        members.append(member)
        if len(members) > len(scanned):
            break
    listed = [(m.name, m.isdir(), m.size, m.offset_data) for m in members]
    kinds_agree = all(m.isdir() or m.isreg() for m in members)
    try:
        same_view(path.name, scanned, listed if kinds_agree else [])
    except TarFormatError as error:
        raise ArchiveError(str(error)) from None
    return members


@contextmanager
def _opened(
    path: Path, max_unpacked_bytes: int, hashed: bool
) -> Iterator[tuple[tarfile.TarFile, list[TarEntry], str | None]]:
    """The archive hashed (when asked), scanned, then opened by tarfile, all from the same open file (one
    view, one file)."""
    with _reading(path), path.open("rb") as raw:
        digest = hashlib.file_digest(raw, "sha256").hexdigest() if hashed else None
        raw.seek(0)
        scanned = _checked_entries(path, raw, max_unpacked_bytes)
        raw.seek(0)
        with tarfile.open(fileobj=raw, mode="r:gz") as tar:
            yield tar, scanned, digest


def _layout(path: Path, members: list[tarfile.TarInfo]) -> tuple[str, tarfile.TarInfo, tarfile.TarInfo]:
    files = {m.name: m for m in members if m.isfile()}
    directories = {m.name.rstrip("/") for m in members if m.isdir()}
    tops = {name.split("/")[0] for name in [*files, *directories]}
    if len(tops) != 1 or len(files) != 2:
        raise ArchiveError(f"{path.name}: found {sorted(files)}; expected {EXPECTED_LAYOUT}")
    model_dir = tops.pop()
    config = files.get(f"{model_dir}/{CONFIG_FILE_NAME}")
    models = [
        m for n, m in files.items() if n.startswith(f"{model_dir}/{MODEL_VERSION}/") and n.count("/") == 2
    ]
    if config is None or len(models) != 1 or not directories <= {model_dir, f"{model_dir}/{MODEL_VERSION}"}:
        raise ArchiveError(f"{path.name}: found {sorted(files)}; expected {EXPECTED_LAYOUT}")
    if not MODEL_DIRECTORY.match(model_dir):
        raise ArchiveError(f"{path.name}: model directory {quoted(model_dir)} is {MODEL_DIRECTORY.refusal}")
    if config.size > MAX_CONFIG_BYTES:
        raise ArchiveError(
            f"{path.name}: {CONFIG_FILE_NAME} is {config.size:,} bytes; allowed at most {MAX_CONFIG_BYTES:,}"
        )
    return model_dir, config, models[0]


def _bounds(path: Path, config: pb.ModelConfig) -> None:
    """Shapes, batch sizes, counts and warm-ups a server could actually allocate (config_bounds)."""
    problem = config_problem(config)
    if problem:
        raise ArchiveError(f"{path.name}: {CONFIG_FILE_NAME}: {problem}")


def _contents(
    path: Path,
    tar: tarfile.TarFile,
    scanned: list[TarEntry],
    allow_fields: frozenset[str],
    digest: str | None,
) -> tuple[ArchiveContents, list]:
    members = _members(path, tar, scanned)
    model_dir, config_member, model_member = _layout(path, members)
    stream = tar.extractfile(config_member)
    assert stream is not None
    config_text = stream.read(MAX_CONFIG_BYTES + 1).decode("utf-8")
    try:
        config = parse_config(config_text)
    except ConfigError as error:
        raise ArchiveError(f"{path.name}: {error}".splitlines()[0]) from None
    file_name = PurePosixPath(model_member.name).name
    fmt = format_of_model_file(file_name)
    if fmt is None:
        raise ArchiveError(
            f"{path.name}: model file {quoted(file_name)}; allowed model.onnx, model.pt, model.plan"
        )
    if config.platform != PLATFORMS[fmt] or config.backend:
        raise ArchiveError(
            f"{path.name}: config platform '{config.platform}' does not serve {file_name}; "
            f"expected '{PLATFORMS[fmt]}'"
        )
    if config.default_model_filename and config.default_model_filename != file_name:
        raise ArchiveError(
            f"{path.name}: default_model_filename {quoted(config.default_model_filename)} "
            f"but the model file is {file_name}"
        )
    _bounds(path, config)
    try:
        check_config(path.name, fmt, config, model_dir, allow_fields=allow_fields)
    except PolicyError as error:
        raise ArchiveError(str(error)) from None
    contents = ArchiveContents(
        path, model_dir, config, fmt, model_member.name, file_name, model_member.size, sha256=digest
    )
    return contents, members


def read_archive(
    path: str | Path,
    *,
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
    allow_fields: frozenset[str] = frozenset(),
    hashed: bool = False,
) -> ArchiveContents:
    """The layout and parsed config.pbtxt of an archive; the model file stays packed."""
    path = Path(path)
    with _opened(path, max_unpacked_bytes, hashed) as (tar, scanned, digest):
        return _contents(path, tar, scanned, allow_fields, digest)[0]


def extract_archive(
    path: str | Path,
    dest: str | Path,
    *,
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
    allow_fields: frozenset[str] = frozenset(),
    hashed: bool = False,
) -> ExtractedArchive:
    """Check an archive and unpack it under dest from the same open file: only the checked members,
    through tarfile's `data` filter (no links, devices, absolute paths or special permission bits)."""
    path, dest = Path(path), Path(dest)
    with _opened(path, max_unpacked_bytes, hashed) as (tar, scanned, digest):
        contents, members = _contents(path, tar, scanned, allow_fields, digest)
        dest.mkdir(parents=True, exist_ok=True)
        try:
            tar.extractall(dest, members=members, filter="data")
        except tarfile.FilterError as error:
            raise ArchiveError(f"{path.name}: refused by the extraction filter ({error})") from None
        except OSError as error:
            raise ArchiveError(f"{path.name}: cannot extract ({error.strerror or error})") from None
    return ExtractedArchive(contents, dest / contents.model_dir)


def check_outputs(
    where: str, outputs: dict[str, np.ndarray], expected: tuple[TensorSpec, ...], batch_size: int
) -> None:
    """Names, datatypes and dims of produced outputs against the config (-1 matches any size)."""
    if set(outputs) != {spec.name for spec in expected}:
        raise ArchiveError(
            f"{where}: outputs {sorted(outputs)} but the config declares {[s.name for s in expected]}"
        )
    for spec in expected:
        value = outputs[spec.name]
        if value.dtype != np.dtype(NUMPY_DTYPES[spec.datatype]):
            raise ArchiveError(
                f"{where}: output '{spec.name}' is {value.dtype}, the config says {spec.datatype}"
            )
        wanted = (batch_size, *spec.dims)
        if len(value.shape) != len(wanted) or any(
            w not in (-1, g) for w, g in zip(wanted, value.shape, strict=True)
        ):
            raise ArchiveError(
                f"{where}: output '{spec.name}' has shape {value.shape}, the config says {wanted}"
            )
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
            raise ArchiveError(f"{where}: output '{spec.name}' contains NaN or infinity")

"""Read and extract model archives (`<dir>/config.pbtxt` + `<dir>/1/model.<ext>`) without running them.

Public API (used by the build, the store, the local Triton and the benchmarks):
- read_archive(path) -> ArchiveContents: layout and parsed config, without unpacking the model.
- extract_archive(path, dest) -> Path of the model directory under dest.
- check_outputs(...): produced outputs against the config's names, datatypes and dims.
Running a model (ONNX Runtime, TorchScript) is the build's job: `triton_mme.model_build.verify`.
Every problem is an ArchiveError with a one-line message.
"""

from __future__ import annotations

import posixpath
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.core.catalog import Format
from triton_mme.core.errors import UserError
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.naming import MODEL_VERSION, PLATFORMS, format_of_model_file
from triton_mme.core.samples import NUMPY_DTYPES
from triton_mme.core.triton_config import ConfigError, parse_config, tensor_specs


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

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return tensor_specs(self.config.input)

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return tensor_specs(self.config.output)


def _unsafe(name: str) -> bool:
    path = PurePosixPath(name)
    return path.is_absolute() or ".." in path.parts or posixpath.normpath(name) != name.rstrip("/")


def _layout(path: Path, members: list[tarfile.TarInfo]) -> tuple[str, tarfile.TarInfo, tarfile.TarInfo]:
    files: dict[str, tarfile.TarInfo] = {}
    directories: set[str] = set()
    for member in members:
        if _unsafe(member.name):
            raise ArchiveError(f"{path.name}: unsafe entry path '{member.name}' (absolute or with '..')")
        if member.isdir():
            directories.add(member.name.rstrip("/"))
        elif member.isfile():
            files[member.name] = member
        else:
            raise ArchiveError(f"{path.name}: entry '{member.name}' is a link or device; only files allowed")
    tops = {name.split("/")[0] for name in [*files, *directories]}
    expected = "exactly '<dir>/config.pbtxt' and '<dir>/1/model.<onnx|pt|plan>'"
    if len(tops) != 1 or len(files) != 2:
        raise ArchiveError(f"{path.name}: found {sorted(files)}; expected {expected}")
    model_dir = tops.pop()
    config = files.get(f"{model_dir}/config.pbtxt")
    models = [
        m for n, m in files.items() if n.startswith(f"{model_dir}/{MODEL_VERSION}/") and n.count("/") == 2
    ]
    if config is None or len(models) != 1 or not directories <= {model_dir, f"{model_dir}/{MODEL_VERSION}"}:
        raise ArchiveError(f"{path.name}: found {sorted(files)}; expected {expected}")
    return model_dir, config, models[0]


def read_archive(path: str | Path) -> ArchiveContents:
    """The layout and parsed config.pbtxt of an archive; the model file stays packed."""
    path = Path(path)
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            model_dir, config_member, model_member = _layout(path, tar.getmembers())
            stream = tar.extractfile(config_member)
            assert stream is not None
            config_text = stream.read().decode("utf-8")
    except (OSError, tarfile.TarError, EOFError, UnicodeDecodeError) as error:
        raise ArchiveError(f"{path.name}: not a readable .tar.gz archive ({error})") from None
    try:
        config = parse_config(config_text)
    except ConfigError as error:
        raise ArchiveError(f"{path.name}: {error}".splitlines()[0]) from None
    file_name = PurePosixPath(model_member.name).name
    fmt = format_of_model_file(file_name)
    if fmt is None:
        raise ArchiveError(f"{path.name}: model file '{file_name}'; allowed model.onnx, model.pt, model.plan")
    if config.platform != PLATFORMS[fmt] or config.backend:
        raise ArchiveError(
            f"{path.name}: config platform '{config.platform}' does not serve {file_name}; "
            f"expected '{PLATFORMS[fmt]}'"
        )
    if config.default_model_filename and config.default_model_filename != file_name:
        raise ArchiveError(
            f"{path.name}: default_model_filename '{config.default_model_filename}' "
            f"but the model file is {file_name}"
        )
    return ArchiveContents(path, model_dir, config, fmt, model_member.name, file_name, model_member.size)


def extract_archive(path: str | Path, dest: str | Path) -> Path:
    """Unpack a checked archive under dest (links, absolute and '..' paths refused); the model dir."""
    contents = read_archive(path)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(contents.path, mode="r:gz") as tar:
            tar.extractall(dest, filter="data")
    except (OSError, tarfile.TarError) as error:
        raise ArchiveError(f"{contents.path.name}: cannot extract ({error})") from None
    return dest / contents.model_dir


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

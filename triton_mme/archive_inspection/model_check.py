"""The one model check every entry point runs: `add`, `upload`, `serve-local`, `serving-check` and the build's
`verify` and cache, all through `inspect_archive`, the package's entry.

An archive is read and unpacked by archive.py (layout, the archive policy on config.pbtxt, bounds), held to
its name and manifest record where asked (record_check), then its model file is inspected without running
it:

- TorchScript: every code record parsed and walked, every pickle's globals read (torchscript_code);
- ONNX: operator domains and tensor locations of every graph (onnx_check);
- TensorRT: the plan cannot be opened without its GPU, so only its first bytes are read: a file that is
  another known format (an ELF executable or shared library, a script, a Windows or Mach-O executable, a
  zip such as a TorchScript model, a gzip) is refused. TensorRT documents no plan header to test for
  (NVIDIA/TensorRT#3073: no API reads it without deserializing the engine), so this refuses other
  formats and proves no plan; `add` still asks for a serving report in which the plan passed.

Everything here is torch-free: the serving check runner and the local Triton's launcher import it. The
build's `verify` and `add` then run ONNX and TorchScript models in the sandbox (model_build.sandbox), which
inspects the loaded graphs too.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import overload

from triton_mme.archive_inspection.archive import (
    ArchiveContents,
    ArchiveError,
    ExtractedArchive,
    extract_archive,
    read_archive,
)
from triton_mme.archive_inspection.onnx_check import check_onnx_file
from triton_mme.archive_inspection.record_check import check_held
from triton_mme.archive_inspection.torchscript_code import scan_torchscript_code
from triton_mme.core.errors import quoted
from triton_mme.core.formats import Format
from triton_mme.core.limits import DEFAULT_MAX_UNPACKED_BYTES
from triton_mme.core.manifest import ArchiveRecord

# The first bytes of formats a TensorRT plan is not (Triton's TensorRT backend would hand any of them to
# the engine deserializer; a shared library would be the payload of an attack, not a model).
NOT_A_PLAN = {
    b"\x7fELF": "an ELF executable or shared library",
    b"#!": "a script",
    b"MZ": "a Windows executable",
    b"\xcf\xfa\xed\xfe": "a Mach-O executable",
    b"\xfe\xed\xfa\xcf": "a Mach-O executable",
    b"\xca\xfe\xba\xbe": "a Mach-O universal binary",
    b"PK\x03\x04": "a zip archive (a TorchScript model is one)",
    b"\x1f\x8b": "a gzip file",
}
_LONGEST_SIGNATURE = max(len(signature) for signature in NOT_A_PLAN)

MODEL_CHECKS = {
    Format.ONNX: "onnx operators in standard domains, tensors inside the file",
    Format.TORCHSCRIPT: "torchscript code of the exporters' operators only",
    Format.TENSORRT: "tensorrt plan is no other known file format",
}


def check_plan_header(where: str, model_file: Path) -> None:
    """Refuse a `model.plan` that is another known format (see the module's docstring)."""
    try:
        with model_file.open("rb") as stream:
            head = stream.read(_LONGEST_SIGNATURE)
    except OSError as error:
        raise ArchiveError(f"{where}: cannot read model.plan ({error.strerror or error})") from None
    for signature, kind in NOT_A_PLAN.items():
        if head.startswith(signature):
            raise ArchiveError(
                f"{where}: model.plan starts with {quoted(signature.decode('latin-1'))}: it is {kind}; "
                "allowed only a serialized TensorRT engine"
            )


def check_model_file(where: str, fmt: Format, model_file: Path) -> str:
    """Inspect an unpacked model file without running it; the check that passed, or ArchiveError."""
    if fmt is Format.TORCHSCRIPT:
        scan_torchscript_code(where, model_file)
    elif fmt is Format.ONNX:
        check_onnx_file(where, model_file)
    else:
        check_plan_header(where, model_file)
    return MODEL_CHECKS[fmt]


@overload
def inspect_archive(
    path: str | Path,
    dest: str | Path,
    *,
    identity: bool = False,
    record: ArchiveRecord | None = None,
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
    allow_fields: frozenset[str] = frozenset(),
) -> ExtractedArchive: ...


@overload
def inspect_archive(
    path: str | Path,
    dest: None = None,
    *,
    packed: bool = False,
    identity: bool = False,
    record: ArchiveRecord | None = None,
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
    allow_fields: frozenset[str] = frozenset(),
) -> ArchiveContents: ...


def inspect_archive(
    path: str | Path,
    dest: str | Path | None = None,
    *,
    packed: bool = False,
    identity: bool = False,
    record: ArchiveRecord | None = None,
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
    allow_fields: frozenset[str] = frozenset(),
) -> ExtractedArchive | ArchiveContents:
    """The model check of an archive, as a hostile file: read, checked and (unless `packed`) unpacked from one
    open file (archive.py), then its unpacked model file inspected without running it. ArchiveError, one
    line, on the first problem.

    - `dest`: unpacked under it, what Triton will load: the file loaded is the file inspected. Returns the
      ExtractedArchive.
    - no `dest`: unpacked into a private scratch directory, inspected, and the scratch removed (an archive
      published rather than loaded here). Returns its ArchiveContents.
    - `packed=True` (no `dest`): only the layout and config.pbtxt are read and checked; the model file stays
      packed and is not inspected, for a caller that needs the config and loads the model through this
      check later.
    - `identity=True`: its file name states its model, format and content hash, all three true.
    - `record`: the same, and it is the file the manifest record names (its sha256) holding the record's
      model in the record's format (record_check).
    """
    path = Path(path)
    held = identity or record is not None
    if packed:
        if dest is not None:
            raise ValueError(f"{path.name}: packed=True with a dest; a packed model file is not unpacked")
        contents = read_archive(
            path, max_unpacked_bytes=max_unpacked_bytes, allow_fields=allow_fields, hashed=held
        )
        if held:
            check_held(contents, record)
        return contents
    if dest is None:
        with tempfile.TemporaryDirectory(prefix="model-check-") as scratch:
            return inspect_archive(
                path,
                Path(scratch) / "unpacked",
                identity=identity,
                record=record,
                max_unpacked_bytes=max_unpacked_bytes,
                allow_fields=allow_fields,
            ).contents
    extracted = extract_archive(
        path, dest, max_unpacked_bytes=max_unpacked_bytes, allow_fields=allow_fields, hashed=held
    )
    if held:
        check_held(extracted.contents, record)
    check_model_file(path.name, extracted.contents.format, extracted.model_file)
    return extracted

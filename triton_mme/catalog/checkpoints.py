"""A user's own checkpoint as a catalog source: where it is, what kind it is, and its pinned content.

A catalog entry names one with `source: checkpoint:<location>`, where the location is a path (relative to
the catalog's folder) or `s3://bucket/key`:

- a Hugging Face model folder, as `save_pretrained` writes it (config.json, `*.safetensors`, tokenizer.json);
  an S3 location of one ends with `/`;
- a state dict in one `.safetensors` file, with `architecture: torchvision:<name>` naming the model it fits;
- a model already exported to ONNX, one `.onnx` file (built without PyTorch, model_build.sources).

Weights load only from safetensors, which holds tensors and nothing else. Pickle checkpoints (`.bin`, `.pt`,
`.pth`, `.ckpt`, `.pkl`) are refused by name: unpickling runs whatever code the file holds, and
`torch.load(weights_only=True)` narrows that but cannot be honoured by every checkpoint saved with pickle.

A checkpoint is pinned by its sha256: of the file, or for a folder of the listing of the files the build
reads (`sha256  relative/path` lines, sorted), so one digest covers the weights, the config and the tokenizer.
This module reads files and JSON only (no PyTorch, no network), so synthesis uses it.
"""

from __future__ import annotations

import hashlib
import re
import struct
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from triton_mme.core.bounded import load_json
from triton_mme.core.errors import UserError, quoted
from triton_mme.core.files import file_sha256
from triton_mme.core.limits import MAX_HF_CONFIG_BYTES, MAX_SAFETENSORS_HEADER_BYTES

CHECKPOINT_KIND = "checkpoint"
S3_SCHEME = "s3://"
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# An S3 bucket name (S3's naming rules, simplified to the characters they allow) and a key without `..`.
_S3_URI = re.compile(r"s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(?P<key>[^\s]{0,1024})")
# Characters an IAM policy's resource ARN and its StringLike conditions read as wildcards (`*`, `?`) or as the
# start of a policy variable (`${`) (IAM User Guide, "IAM JSON policy elements: Resource" and "IAM policy
# elements: Variables and tags"); a key holding one would grant more than the checkpoint.
IAM_WILDCARDS = ("*", "?", "${")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
SAFETENSORS_SUFFIX = ".safetensors"
ONNX_SUFFIX = ".onnx"
# What the build reads of a Hugging Face folder, and so what its digest covers. Anything else in the folder
# (pickle weights beside the safetensors, modeling code, optimizer state) is neither read nor hashed.
HF_CONFIG_FILE = "config.json"
HF_TOKENIZER_FILE = "tokenizer.json"
HF_FOLDER_FILES = (
    HF_CONFIG_FILE,
    HF_TOKENIZER_FILE,
    "tokenizer_config.json",
    "special_tokens_map.json",
    "model.safetensors.index.json",
)
HF_WEIGHT_FILE = re.compile(r"model(?:-\d{5}-of-\d{5})?\.safetensors")
SAFETENSORS_DTYPES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip


class CheckpointError(UserError, ValueError):
    """A checkpoint that cannot be used; the message is one line naming the file and what is allowed."""


class CheckpointKind(StrEnum):
    HF_FOLDER = "hf-folder"
    STATE_DICT = "state-dict"
    # A model already exported to ONNX: built without PyTorch (model_build.sources).
    ONNX_FILE = "onnx-file"

    @property
    def is_file(self) -> bool:
        """One file (a state dict, an ONNX model), not a folder."""
        return self is not CheckpointKind.HF_FOLDER

    @property
    def file_name(self) -> str:
        """The name of the verified local copy of a one-file checkpoint."""
        return "model.onnx" if self is CheckpointKind.ONNX_FILE else "model" + SAFETENSORS_SUFFIX


@dataclass(frozen=True)
class CheckpointLocation:
    """Where a checkpoint is: a local path (as written, relative to the catalog's folder) or an S3 URI."""

    text: str

    @property
    def is_s3(self) -> bool:
        return self.text.startswith(S3_SCHEME)

    @property
    def bucket(self) -> str:
        return self._s3()["bucket"]

    @property
    def key(self) -> str:
        return self._s3()["key"]

    def _s3(self) -> re.Match[str]:
        matched = _S3_URI.fullmatch(self.text)
        if matched is None:
            raise CheckpointError(f"{quoted(self.text)} is not an S3 URI; allowed s3://<bucket>/<key>")
        return matched

    def local_path(self, base_dir: Path) -> Path:
        """The path, symlinks resolved; CheckpointError when it resolves outside the catalog's folder (it
        would travel in the build runner's asset and be built from, though no catalog reader can see it)."""
        root = base_dir.resolve()
        path = (root / self.text).resolve()
        if not path.is_relative_to(root):
            raise CheckpointError(
                f"{quoted(self.text)} resolves to {path}, outside the catalog's folder {root} (symlinks "
                "followed); allowed: a file or folder inside the catalog's folder, or s3://<bucket>/<key>"
            )
        return path

    def joined(self, relative: str) -> CheckpointLocation:
        """The location of a file inside this folder (S3 prefix or local directory)."""
        return CheckpointLocation(self.text.rstrip("/") + "/" + relative)


def location_problem(text: str) -> str | None:
    """Why `text` is no checkpoint location (one line), or None."""
    if not text.strip() or text != text.strip():
        return "a path or s3://<bucket>/<key>, without surrounding spaces"
    if text.startswith(S3_SCHEME):
        if _S3_URI.fullmatch(text) is None or ".." in PurePosixPath(text[len(S3_SCHEME) :]).parts:
            return f"{quoted(text)} is not an S3 URI; allowed s3://<bucket>/<key> (no '..', no spaces)"
        if any(mark in text for mark in IAM_WILDCARDS):
            return (
                f"{quoted(text)}: '*', '?' and '${{' are wildcards and variables in the IAM policy that "
                "grants the build runner this key (it would read more than this checkpoint); allowed: a key "
                "without them"
            )
        return None
    if "://" in text:
        return f"{quoted(text)}: only local paths and s3:// locations; allowed a path or s3://<bucket>/<key>"
    lowered = text.lower().rstrip("/")
    if lowered.endswith(PICKLE_SUFFIXES):
        return (
            f"{quoted(text)} is a pickle checkpoint, which runs code when loaded; allowed: safetensors "
            "(safetensors.torch.save_file, or save_pretrained(..., safe_serialization=True))"
        )
    return None


def checkpoint_kind(location: CheckpointLocation, *, architecture: str | None) -> CheckpointKind:
    """A state dict when the entry names its architecture, an exported model for an `.onnx` file, a Hugging
    Face folder otherwise."""
    if location.text.endswith(ONNX_SUFFIX):
        if architecture is not None:
            raise CheckpointError(
                f"{quoted(location.text)} is an exported ONNX model, which states its own graph; leave "
                "architecture out (it names the model a state dict fits)"
            )
        return CheckpointKind.ONNX_FILE
    if architecture is not None:
        if not location.text.endswith(SAFETENSORS_SUFFIX):
            raise CheckpointError(
                f"{quoted(location.text)}: a state dict for architecture {architecture} must be one "
                f"{SAFETENSORS_SUFFIX} file; allowed: a path or s3:// key ending in {SAFETENSORS_SUFFIX}"
            )
        return CheckpointKind.STATE_DICT
    if location.text.endswith(SAFETENSORS_SUFFIX):
        raise CheckpointError(
            f"{quoted(location.text)} is a state dict, which needs the model it fits; add "
            "architecture: torchvision:<name> (e.g. torchvision:resnet50)"
        )
    if location.is_s3 and not location.text.endswith("/"):
        raise CheckpointError(
            f"{quoted(location.text)}: a Hugging Face folder in S3 is a prefix ending with '/'; allowed "
            "s3://<bucket>/<prefix>/ (a folder saved by save_pretrained)"
        )
    return CheckpointKind.HF_FOLDER


# --- safetensors headers: names, dtypes and shapes of the tensors, read without loading any -----------------


@dataclass(frozen=True)
class TensorHeader:
    dtype: str
    shape: tuple[int, ...]

    @property
    def elements(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count


def parse_safetensors_header(prefix: bytes, *, where: str, file_size: int) -> dict[str, TensorHeader]:
    """The tensors a safetensors file declares, from its first bytes (8-byte length, then JSON).

    Checks what safetensors itself checks before trusting the header (safetensors/src/tensor.rs, `validate`):
    its length bound, known dtypes, whole-number shapes and offsets, a string-to-string `__metadata__`, and
    byte ranges that match their shapes and tile the data exactly (no overlap, no gap, no byte past the end).
    """
    if len(prefix) < 8:
        raise CheckpointError(f"{where}: not a safetensors file (shorter than its 8-byte header length)")
    (length,) = struct.unpack("<Q", prefix[:8])
    if length > MAX_SAFETENSORS_HEADER_BYTES or 8 + length > file_size:
        raise CheckpointError(
            f"{where}: not a safetensors file (header length {length:,} does not fit the file)"
        )
    raw = prefix[8 : 8 + length]
    if len(raw) < length:
        raise CheckpointError(f"{where}: truncated safetensors header")
    try:
        header = load_json(raw, where=where, max_bytes=MAX_SAFETENSORS_HEADER_BYTES)
    except ValueError:
        raise CheckpointError(f"{where}: not a safetensors file (its header is not JSON)") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{where}: not a safetensors file (its header is not a JSON object)")
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise CheckpointError(
            f"{where}: its __metadata__ is not a mapping of strings to strings; not a safetensors file"
        )
    data_size = file_size - 8 - length
    tensors: dict[str, TensorHeader] = {}
    ranges: list[tuple[int, int, str]] = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        tensor, start, end = _tensor(name, info, where=where, data_size=data_size)
        tensors[name] = tensor
        ranges.append((start, end, name))
    if not tensors:
        raise CheckpointError(f"{where}: the safetensors file holds no tensor")
    _check_tiling(sorted(ranges), where=where, data_size=data_size)
    return tensors


def _check_tiling(ranges: list[tuple[int, int, str]], *, where: str, data_size: int) -> None:
    """safetensors' own rule: sorted by offset, each tensor starts where the one before ends, and the last
    ends at the end of the data."""
    position = 0
    for start, end, name in ranges:
        if start != position:
            raise CheckpointError(
                f"{where}: tensor {quoted(name)} starts at byte {start:,}, not {position:,}: byte ranges "
                "overlap or leave a gap; not a safetensors file"
            )
        position = end
    if position != data_size:
        raise CheckpointError(
            f"{where}: its tensors end at byte {position:,} of {data_size:,} data bytes; not a safetensors "
            "file"
        )


def _whole(value: Any) -> int | None:
    """A JSON whole number within an unsigned 64-bit range (safetensors' usize); None for a float, a bool,
    an infinity, text or a number past it (so no arithmetic ever sees one)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64:
        return value
    return None


def _tensor(name: str, info: Any, *, where: str, data_size: int) -> tuple[TensorHeader, int, int]:
    """A tensor's header and byte range; CheckpointError unless every field is what safetensors allows."""
    fields = info if isinstance(info, dict) else {}
    dtype, shape, offsets = fields.get("dtype"), fields.get("shape"), fields.get("data_offsets")
    width = SAFETENSORS_DTYPES.get(dtype) if isinstance(dtype, str) else None
    # PyTorch's own bound on a tensor's rank; a longer shape is no tensor it could load.
    dims = [_whole(d) for d in shape] if isinstance(shape, list) and len(shape) <= 64 else [None]
    span = [_whole(o) for o in offsets] if isinstance(offsets, list) else []
    if width is not None and len(span) == 2 and None not in dims and None not in span:
        tensor = TensorHeader(str(dtype), tuple(d for d in dims if d is not None))
        start, end = (o or 0 for o in span)
        if 0 <= start <= end <= data_size and end - start == tensor.elements * width:
            return tensor, start, end
    raise CheckpointError(
        f"{where}: tensor {quoted(name)} has no valid dtype, shape and byte range; not a safetensors file"
    )


def read_safetensors_header(path: Path, *, where: str | None = None) -> dict[str, TensorHeader]:
    where = where or str(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as stream:
            head = stream.read(8)
            if len(head) == 8:
                (length,) = struct.unpack("<Q", head)
                head += stream.read(min(length, MAX_SAFETENSORS_HEADER_BYTES + 1))
    except OSError as error:
        raise CheckpointError(f"{where}: cannot read it ({error.strerror or error})") from None
    return parse_safetensors_header(head, where=where, file_size=size)


# --- digests ------------------------------------------------------------------------------------------------


def folder_listing(files: dict[str, str]) -> str:
    """`sha256  relative/path` lines, sorted by path: what a folder's digest is the sha256 of."""
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(files.items()))


def folder_digest(files: dict[str, str]) -> str:
    return hashlib.sha256(folder_listing(files).encode("utf-8")).hexdigest()


def hf_folder_files(names: list[str]) -> list[str]:
    """The files of a Hugging Face folder the build reads (config, tokenizer, safetensors weights)."""
    return sorted(n for n in names if n in HF_FOLDER_FILES or HF_WEIGHT_FILE.fullmatch(n))


def local_folder_files(directory: Path) -> dict[str, Path]:
    """The files the build reads of a local Hugging Face folder, by name; CheckpointError (one line) when one
    of them is a symbolic link (the pin and the shipped copy are of the folder's own files, never of what a
    link points to)."""
    entries = list(directory.iterdir())
    linked = hf_folder_files([p.name for p in entries if p.is_symlink()])
    if linked:
        raise CheckpointError(
            f"{directory / linked[0]}: a symbolic link; allowed: the file itself in the checkpoint's folder"
        )
    present = [p.name for p in entries if p.is_file()]
    return {name: directory / name for name in hf_folder_files(present)}


def local_digest(path: Path, kind: CheckpointKind) -> tuple[str, int]:
    """(sha256, bytes) of a local checkpoint: the file's, or the folder's listing digest and total size."""
    if kind.is_file:
        return file_sha256(path), path.stat().st_size
    files = local_folder_files(path)
    return folder_digest({n: file_sha256(p) for n, p in files.items()}), sum(
        p.stat().st_size for p in files.values()
    )


def read_hf_config(path: Path, *, where: str) -> dict[str, Any]:
    from triton_mme.core.bounded import DocumentError, read_json

    try:
        config = read_json(path, max_bytes=MAX_HF_CONFIG_BYTES, where=where)
    except DocumentError as error:
        raise CheckpointError(str(error)) from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{where}: not a Hugging Face config (a JSON object with model_type)")
    return config

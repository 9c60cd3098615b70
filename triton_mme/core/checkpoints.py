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
        return (base_dir / self.text).resolve()

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

    Checks what safetensors itself checks before trusting the header: its length bound, known dtypes, and
    that every tensor's byte range matches its shape and lies inside the file.
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
    data_size = file_size - 8 - length
    tensors: dict[str, TensorHeader] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _tensor(name, info, where=where, data_size=data_size)
    if not tensors:
        raise CheckpointError(f"{where}: the safetensors file holds no tensor")
    return tensors


def _tensor(name: str, info: Any, *, where: str, data_size: int) -> TensorHeader:
    try:
        dtype, shape, (start, end) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
        width = SAFETENSORS_DTYPES[dtype]
        tensor = TensorHeader(dtype, tuple(int(d) for d in shape))
        valid = all(d >= 0 for d in tensor.shape) and 0 <= start <= end <= data_size
        valid = valid and end - start == tensor.elements * width
    except (KeyError, TypeError, ValueError):
        valid = False
    if not valid:
        raise CheckpointError(
            f"{where}: tensor {quoted(name)} has no valid dtype, shape and byte range; not a safetensors file"
        )
    return tensor


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
    """The files the build reads of a local Hugging Face folder, by name (regular files only)."""
    present = [p.name for p in directory.iterdir() if p.is_file() and not p.is_symlink()]
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

"""The build manifest: which archive (TargetModel) serves which model and format.

The manifest is the contract between the build stage, the endpoint's users and the operating
commands. It is written next to the archives as `manifest.json` and published under its own
prefix (never under `models/`), after every archive it names is in place.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from triton_mme.core.locations import MANIFEST_FILE_NAME

__all__ = ["MANIFEST_FILE_NAME", "ArchiveRecord", "ImagePreprocessing", "Manifest", "TensorSpec"]
MANIFEST_SCHEMA_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TensorSpec(_Frozen):
    """A model input or output as Triton sees it: dims exclude the batch dimension."""

    name: str
    datatype: str  # Triton/KServe datatype: FP32, FP16, INT64, ...
    dims: tuple[int, ...]


class ImagePreprocessing(_Frozen):
    """How a picture becomes this model's input: the evaluation transform of its torchvision weights
    (resize the short side, center-crop, scale to [0, 1], normalise), recorded at build time so that a
    client needs no deep-learning library to prepare a request."""

    resize_size: int
    crop_size: tuple[int, int]
    mean: tuple[float, ...]
    std: tuple[float, ...]
    interpolation: Literal["nearest", "bilinear", "bicubic"] = "bilinear"


class ArchiveRecord(_Frozen):
    """One built archive: the object key under the model prefix is `target_model`."""

    name: str
    format: str
    target_model: str
    sha256: str
    size_bytes: int
    source: str
    weights: str
    max_batch_size: int
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    # Format-specific facts recorded at build time (opset, TensorRT version, GPU name, compute
    # capability, precision, parity errors, ...).
    details: dict[str, Any] = Field(default_factory=dict)
    preprocessing: ImagePreprocessing | None = None
    # Files that travel with the manifest (never inside the model prefix), by role: "labels" (class
    # names, JSON list), "tokenizer" (tokenizer.json). Content-addressed names, see core.naming.
    files: dict[str, str] = Field(default_factory=dict)


class Manifest(_Frozen):
    schema_version: int = MANIFEST_SCHEMA_VERSION
    archives: tuple[ArchiveRecord, ...] = ()

    def find(self, name: str, format: str | None = None) -> ArchiveRecord:
        """The archive for a logical model name (and format, when the model has several)."""
        matches = [a for a in self.archives if a.name == name and (format is None or a.format == format)]
        if not matches:
            known = ", ".join(sorted({f"{a.name}/{a.format}" for a in self.archives})) or "none"
            wanted = f"'{name}'" + (f" in format '{format}'" if format else "")
            raise KeyError(f"no archive for model {wanted} in the manifest; known: {known}")
        if len(matches) > 1:
            formats = ", ".join(a.format for a in matches)
            raise KeyError(f"model '{name}' has archives in several formats ({formats}); name one")
        return matches[0]

    @property
    def target_models(self) -> frozenset[str]:
        return frozenset(a.target_model for a in self.archives)

    @property
    def files(self) -> frozenset[str]:
        """Every companion file the archives name (labels, tokenizers)."""
        return frozenset(name for a in self.archives for name in a.files.values())

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"

    @property
    def sha256(self) -> str:
        """The digest of `to_json()`: the name of the manifest's immutable published copy."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        return cls.model_validate(json.loads(text))

    @classmethod
    def read(cls, path: str | Path) -> Manifest:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

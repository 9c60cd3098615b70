"""The build manifest: which archive (TargetModel) serves which model and format.

The manifest is the contract between the build stage, the endpoint's users and the operating
commands. It is written next to the archives as `manifest.json` and published under its own
prefix (never under `models/`), after every archive it names is in place.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from triton_mme.core.bounded import DocumentError, load_json
from triton_mme.core.errors import UserError, describe_validation_error, quoted
from triton_mme.core.formats import Format
from triton_mme.core.limits import MAX_BATCH_SIZE, MAX_MANIFEST_BYTES, MAX_TENSOR_DIM
from triton_mme.core.locations import MANIFEST_FILE_NAME
from triton_mme.core.naming import (
    ARCHIVE_NAME,
    COMPANION_NAME,
    COMPANION_ROLE,
    MODEL_NAME,
    companion_suffix,
)
from triton_mme.core.suggest import known_formats, known_names

__all__ = [
    "MANIFEST_FILE_NAME",
    "ArchiveRecord",
    "ComponentPlacement",
    "ImagePreprocessing",
    "Manifest",
    "MultiModelPlacement",
    "Provenance",
    "TensorSpec",
]
MANIFEST_SCHEMA_VERSION = 1


class ManifestError(UserError, ValueError):
    """A manifest that cannot be used; the message is one line naming the field and what is allowed."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TensorSpec(_Frozen):
    """A model input or output as Triton sees it: dims exclude the batch dimension."""

    name: str
    datatype: str  # Triton/KServe datatype: FP32, FP16, INT64, ...
    dims: tuple[Annotated[int, Field(ge=-1, le=MAX_TENSOR_DIM)], ...]


class ImagePreprocessing(_Frozen):
    """How a picture becomes this model's input: the evaluation transform of its torchvision weights
    (resize the short side, center-crop, scale to [0, 1], normalise), recorded at build time so that a
    client needs no deep-learning library to prepare a request."""

    resize_size: int
    crop_size: tuple[int, int]
    mean: tuple[float, ...]
    std: tuple[float, ...]
    interpolation: Literal["nearest", "bilinear", "bicubic"] = "bilinear"


class Provenance(_Frozen):
    """Where an archive came from: the catalog source as written, its pinned sha256 (checkpoints; None for a
    public model named by id) and the builder (the build code's hash, model_build.cache)."""

    source: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    builder: str


class MultiModelPlacement(_Frozen):
    """Served by the multi-model endpoint: InvokeEndpoint with TargetModel (every manifest's default)."""

    kind: Literal["mme"] = "mme"


class ComponentPlacement(_Frozen):
    """Served by an inference component of its own on the inference-component endpoint: InvokeEndpoint with
    InferenceComponentName (catalog `placement: dedicated`, docs/placement.md)."""

    kind: Literal["dedicated"] = "dedicated"
    # The catalog's dedicated.min_copies: at 0 the component may have no copy when a request arrives.
    min_copies: Annotated[int, Field(ge=0)] = 1

    @property
    def scales_to_zero(self) -> bool:
        return self.min_copies == 0


Placement = Annotated[MultiModelPlacement | ComponentPlacement, Field(discriminator="kind")]
MULTI_MODEL = MultiModelPlacement()


class ArchiveRecord(_Frozen):
    """One built archive: the object key under the model prefix is `target_model`."""

    name: str
    format: str
    target_model: str
    sha256: str
    size_bytes: Annotated[int, Field(ge=0)]
    source: str
    weights: str
    max_batch_size: Annotated[int, Field(ge=0, le=MAX_BATCH_SIZE)]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    # Format-specific facts recorded at build time (opset, TensorRT version, GPU name, compute
    # capability, precision, parity errors, ...).
    details: dict[str, Any] = Field(default_factory=dict)
    preprocessing: ImagePreprocessing | None = None
    # Files that travel with the manifest (never inside the model prefix), by role: "labels" (class
    # names, JSON list), "tokenizer" (tokenizer.json), "golden" (inputs and PyTorch's outputs to replay,
    # core.golden). Content-addressed names, see core.naming.
    files: dict[str, str] = Field(default_factory=dict)
    # Absent in manifests written before provenance was recorded.
    provenance: Provenance | None = None
    # Where the endpoint serves it; absent (the multi-model endpoint) in manifests written before placements,
    # and left out of the JSON when it is the multi-model endpoint, so such a manifest keeps its digest.
    placement: Placement = MULTI_MODEL

    @model_serializer(mode="wrap")
    def _placement_only_when_dedicated(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if isinstance(self.placement, MultiModelPlacement):
            dumped.pop("placement", None)
        return dumped

    @property
    def is_dedicated(self) -> bool:
        """Served by an inference component of its own (core.naming.inference_component_name names it)."""
        return isinstance(self.placement, ComponentPlacement)

    # Names that become object keys and paths are checked when a manifest is built or read, so a
    # manifest naming `../secret.txt` cannot even be loaded, let alone uploaded or followed.
    @field_validator("name")
    @classmethod
    def _name_is_a_model_name(cls, value: str) -> str:
        if not MODEL_NAME.match(value):
            raise ValueError(MODEL_NAME.refusal)
        return value

    @field_validator("format")
    @classmethod
    def _format_is_known(cls, value: str) -> str:
        if value not in {f.value for f in Format}:
            raise ValueError(f"one of {', '.join(f.value for f in Format)}")
        return value

    @field_validator("target_model")
    @classmethod
    def _target_model_is_an_archive_name(cls, value: str) -> str:
        if not ARCHIVE_NAME.match(value):
            raise ValueError(ARCHIVE_NAME.refusal)
        return value

    @field_validator("files")
    @classmethod
    def _files_have_content_addressed_names(cls, value: dict[str, str]) -> dict[str, str]:
        for role, name in value.items():
            if not COMPANION_ROLE.match(role):
                raise ValueError(f"role {quoted(role)} is {COMPANION_ROLE.refusal}")
            named = COMPANION_NAME.match(name)
            suffix = companion_suffix(role)
            if named is None or named["role"] != role or named["suffix"] != suffix:
                raise ValueError(
                    f"{role}: {quoted(name)} is not a {role} file name; allowed "
                    f"{role}-<content hash>.{suffix}, {COMPANION_NAME.allowed}"
                )
        return value


class Manifest(_Frozen):
    schema_version: int = MANIFEST_SCHEMA_VERSION
    archives: tuple[ArchiveRecord, ...] = ()

    @model_validator(mode="after")
    def _one_archive_per_model_and_format(self) -> Manifest:
        seen: set[tuple[str, str]] = set()
        for record in self.archives:
            key = (record.name, record.format)
            if key in seen:
                raise ValueError(f"model {quoted(record.name)} has two archives in format {record.format}")
            seen.add(key)
        return self

    def find(self, name: str, format: str | None = None) -> ArchiveRecord:
        """The archive for a logical model name (and format, when the model has several)."""
        matches = [a for a in self.archives if a.name == name and (format is None or a.format == format)]
        if not matches:
            known = known_formats(name, [a.format for a in self.archives if a.name == name]) or known_names(
                name, {a.name for a in self.archives}
            )
            wanted = f"'{name}'" + (f" in format '{format}'" if format else "")
            raise KeyError(f"no archive for model {wanted} in the manifest; {known}")
        if len(matches) > 1:
            formats = ", ".join(a.format for a in matches)
            raise KeyError(f"model '{name}' has archives in several formats ({formats}); name one")
        return matches[0]

    @property
    def target_models(self) -> frozenset[str]:
        return frozenset(a.target_model for a in self.archives)

    @property
    def files(self) -> frozenset[str]:
        """Every companion file the archives name (labels, tokenizers, golden data)."""
        return frozenset(name for a in self.archives for name in a.files.values())

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"

    @property
    def sha256(self) -> str:
        """The digest of `to_json()`: the name of the manifest's immutable published copy."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    @classmethod
    def from_json(cls, text: str | bytes) -> Manifest:
        """Parse and validate within core.limits' bounds; ManifestError (a ValueError) with one line on any
        problem."""
        try:
            return cls.model_validate(load_json(text, where="", max_bytes=MAX_MANIFEST_BYTES))
        except ValidationError as error:
            raise ManifestError(describe_validation_error(error, whole="manifest")) from None
        except DocumentError as error:
            raise ManifestError(str(error)) from None

    @classmethod
    def read(cls, path: str | Path) -> Manifest:
        """Read a manifest file, refused unread past MAX_MANIFEST_BYTES (OSError when it cannot be read)."""
        path = Path(path)
        with path.open("rb") as stream:
            data = stream.read(MAX_MANIFEST_BYTES + 1)
        return cls.from_json(data)

"""The model catalog: which models to build, in which formats, with which serving settings.

This module is the single schema for `models.yaml`. It imports no deep-learning library, so the
CDK app can read the catalog cheaply. Every field a user may leave out has a default here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from triton_mme.catalog.checkpoints import (
    CHECKPOINT_KIND,
    SHA256_HEX,
    CheckpointError,
    CheckpointKind,
    CheckpointLocation,
    checkpoint_kind,
    location_problem,
)
from triton_mme.catalog.families import FamilyError, expand_family, is_family
from triton_mme.catalog.labels import LabelsError, with_label_files_read
from triton_mme.catalog.lock import CatalogLock, CheckpointPin, LockError, lock_path, read_lock
from triton_mme.core.bounded import DocumentError, load_yaml
from triton_mme.core.errors import UserError, describe_error_details, quoted
from triton_mme.core.formats import Format, Weights
from triton_mme.core.limits import (
    MAX_BATCH_SIZE,
    MAX_CATALOG_BYTES,
    MAX_INSTANCE_COUNT,
    MAX_PREFERRED_BATCH_SIZES,
    MAX_QUEUE_DELAY_MICROSECONDS,
    MAX_SEQUENCE_LENGTH,
    MAX_THREAD_COUNT,
    shape_problem,
)
from triton_mme.core.naming import HF_CONFIG_NAME, MODEL_NAME
from triton_mme.core.suggest import did_you_mean, known_names

SOURCE_KINDS = ("torchvision", "huggingface", CHECKPOINT_KIND)
# The architectures a state dict may name (`architecture:`), checked against torchvision's registry at synth.
ARCHITECTURE_KINDS = ("torchvision",)
DEFAULT_IMAGE_SHAPE = (3, 224, 224)
DEFAULT_SEQUENCE_LENGTH = 128


__all__ = ["Catalog", "CatalogError", "Format", "ModelEntry", "Weights", "load_catalog", "parse_catalog"]


class CatalogError(UserError, ValueError):
    """A catalog that cannot be used; the message is one line naming entry, field and what is allowed."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)


class DynamicBatching(_Frozen):
    """Triton's dynamic batcher: requests are merged up to a preferred size or until the delay passes."""

    enabled: bool = True
    preferred_batch_sizes: Annotated[
        tuple[Annotated[int, Field(ge=1)], ...], Field(max_length=MAX_PREFERRED_BATCH_SIZES)
    ] = ()
    max_queue_delay_microseconds: Annotated[int, Field(ge=0, le=MAX_QUEUE_DELAY_MICROSECONDS)] = 100


class TensorRTSettings(_Frozen):
    """How the TensorRT plan is built from the ONNX export."""

    precision: Literal["fp16", "fp32"] = "fp16"
    workspace_mib: Annotated[int, Field(ge=64, le=65536)] = 4096


class OnnxRuntimeAccelerator(_Frozen):
    """ONNX Runtime's TensorRT execution provider inside Triton's ONNX backend."""

    enabled: bool = False
    precision: Literal["fp16", "fp32"] = "fp16"
    # Without an engine cache the accelerator rebuilds its engines at every model load, which
    # turns each multi-model cold start into a TensorRT build.
    engine_cache: bool = True


class OnnxRuntimeSettings(_Frozen):
    """The ONNX Runtime settings that Triton's ONNX backend reads from config.pbtxt."""

    graph_optimization: Literal["disabled", "basic", "extended", "all"] = "all"
    cudnn_conv_algo_search: Literal["exhaustive", "heuristic", "default"] = "heuristic"
    # Sequential is ONNX Runtime's own default; parallel (the seed's GPU tuning) only helps graphs with
    # many independent branches and measured 1.7x slower on ResNet-50 here (docs/benchmarks.md).
    execution_mode: Literal["sequential", "parallel"] = "sequential"
    arena_extend_strategy: Literal["next_power_of_two", "same_as_requested"] = "same_as_requested"
    enable_mem_pattern: bool = True
    do_copy_in_default_stream: bool = True
    intra_op_thread_count: Annotated[int, Field(ge=0, le=MAX_THREAD_COUNT)] = 0
    inter_op_thread_count: Annotated[int, Field(ge=0, le=MAX_THREAD_COUNT)] = 0
    tensorrt_accelerator: OnnxRuntimeAccelerator = OnnxRuntimeAccelerator()


PLACEMENTS = ("mme", "dedicated")
# Copies of one inference component; the platform's own limits (per instance type, per endpoint) are checked
# at synth against the platform table, this bound only keeps a typo from asking for thousands.
MAX_COPIES = 64


class DedicatedPlacement(_Frozen):
    """How a `placement: dedicated` entry runs as an inference component: which archive, how many copies."""

    # The archive the inference component serves (one of the entry's formats); left out, the entry's first.
    format: Format | None = None
    # Copies at deployment, and the range the component's own target tracking may move in; min_copies 0
    # lets it scale to zero where the platform allows it (checked at synth).
    copies: Annotated[int, Field(ge=1, le=MAX_COPIES)] = 1
    min_copies: Annotated[int, Field(ge=0, le=MAX_COPIES)] = 1
    max_copies: Annotated[int, Field(ge=1, le=MAX_COPIES)] | None = None

    @model_validator(mode="after")
    def _copies_are_ordered(self) -> DedicatedPlacement:
        top = self.max_copies if self.max_copies is not None else self.copies
        if not self.min_copies <= self.copies <= top:
            raise ValueError(
                f"min_copies {self.min_copies} <= copies {self.copies} <= max_copies {top} must hold"
            )
        return self

    @property
    def copy_range(self) -> tuple[int, int]:
        """(min, max) copies for the component's scaling."""
        return self.min_copies, self.max_copies if self.max_copies is not None else self.copies


# Fields that decide where a built archive is served, not what is built: left out of the build's cache key.
SERVING_FIELDS = ("placement", "dedicated")


class ModelEntry(_Frozen):
    """One model of the catalog; one archive is built per (model, format)."""

    name: str
    source: str
    # Required for torchvision and huggingface sources; a checkpoint's weights are its own (`checkpoint`).
    # Left out, it is None until the entry's own check below sets it or refuses the entry.
    weights: Weights = None  # type: ignore[assignment]
    formats: tuple[Format, ...]
    max_batch_size: Annotated[int, Field(ge=1, le=MAX_BATCH_SIZE)]
    input_shape: Annotated[tuple[Annotated[int, Field(ge=1)], ...], Field(min_length=1)] | None = None
    sequence_length: Annotated[int, Field(ge=1, le=MAX_SEQUENCE_LENGTH)] | None = None
    # Hugging Face architecture for `weights: random`: a dict of config fields, or the name of a
    # config shipped with the project (triton_mme/sizing/hf_configs/<name>.json). Never fetched.
    hf_config: dict[str, Any] | str | None = None
    dynamic_batching: DynamicBatching = DynamicBatching()
    instance_count: Annotated[int, Field(ge=1, le=MAX_INSTANCE_COUNT)] = 1
    # In a multi-model endpoint the first request triggers the load and waits for it, so a warm-up
    # inference only lengthens every cold start; enable it where models are loaded ahead of traffic.
    warmup: bool = False
    tensorrt: TensorRTSettings = TensorRTSettings()
    onnxruntime: OnnxRuntimeSettings = OnnxRuntimeSettings()
    # A state dict's model: `torchvision:<name>` (checkpoint sources only, docs/catalog.md).
    architecture: str | None = None
    # The checkpoint's pinned content (catalog.checkpoints); may come from the lock file instead.
    sha256: str | None = None
    # A fine-tune's class names, one per output (catalog.labels: a list, or a file read at load).
    labels: tuple[Annotated[str, Field(min_length=1)], ...] | str | None = None
    # Where the endpoint serves it: the multi-model endpoint's shared cache (`mme`) or an inference component
    # of its own with scaled copies (`dedicated`, docs/placement.md).
    placement: Literal["mme", "dedicated"] = "mme"
    # A dedicated entry's copies; None on an mme entry, filled with the defaults on a dedicated one.
    dedicated: DedicatedPlacement | None = None
    # The lock file's record of this checkpoint (size, parameters), set by the catalog's loader.
    _pin: CheckpointPin | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _name_is_a_target_model_prefix(cls, value: str) -> str:
        if not MODEL_NAME.match(value):
            raise ValueError(MODEL_NAME.allowed)
        return value

    @field_validator("hf_config")
    @classmethod
    def _hf_config_names_a_shipped_file(cls, value: dict[str, Any] | str | None) -> Any:
        # The name becomes a file name under the shipped configs directory: never a path.
        if isinstance(value, str) and not HF_CONFIG_NAME.match(value):
            raise ValueError(
                f"a mapping of config fields or the name of a shipped config: {HF_CONFIG_NAME.allowed}"
            )
        return value

    @field_validator("source")
    @classmethod
    def _source_has_a_known_kind(cls, value: str) -> str:
        kind, _, identifier = value.partition(":")
        if kind not in SOURCE_KINDS or not identifier.strip():
            raise ValueError(
                "'torchvision:<model>', 'huggingface:<model id>' or 'checkpoint:<path or s3://bucket/key>'"
            )
        if kind == CHECKPOINT_KIND:
            problem = location_problem(identifier)
            if problem:
                raise ValueError(problem)
        return value

    @field_validator("weights", mode="before")
    @classmethod
    def _weights_are_known(cls, value: Any) -> Any:
        if value is not None and value not in {w.value for w in Weights}:
            raise ValueError(f"{quoted(value)}: 'pretrained' or 'random' (a checkpoint source leaves it out)")
        return value

    @field_validator("sha256")
    @classmethod
    def _sha256_is_hex(cls, value: str | None) -> str | None:
        if value is not None and not SHA256_HEX.fullmatch(value):
            raise ValueError("64 lowercase hex digits (the checkpoint's sha256; `triton-mme lock` writes it)")
        return value

    @field_validator("architecture")
    @classmethod
    def _architecture_has_a_known_kind(cls, value: str | None) -> str | None:
        if value is not None:
            kind, _, identifier = value.partition(":")
            if kind not in ARCHITECTURE_KINDS or not identifier.strip():
                raise ValueError("'torchvision:<model>', e.g. torchvision:resnet50")
        return value

    @model_validator(mode="after")
    def _weights_fit_the_source(self) -> ModelEntry:
        if self.source_kind == CHECKPOINT_KIND:
            if self.weights not in (None, Weights.CHECKPOINT):
                raise ValueError("weights: a checkpoint source brings its own weights; leave weights out")
            object.__setattr__(self, "weights", Weights.CHECKPOINT)
            try:
                kind = checkpoint_kind(self.checkpoint_location, architecture=self.architecture)
            except CheckpointError as error:
                raise ValueError(f"source: {error}") from None
            if kind is CheckpointKind.ONNX_FILE:
                if Format.TORCHSCRIPT in self.formats:
                    raise ValueError(
                        "formats: an exported ONNX model builds onnx and tensorrt only, not torchscript"
                    )
                for field in ("input_shape", "sequence_length"):
                    if getattr(self, field) is not None:
                        raise ValueError(
                            f"{field}: an exported ONNX model's graph states its inputs; leave it out"
                        )
            return self
        if self.weights is None or self.weights is Weights.CHECKPOINT:
            raise ValueError("weights: required for this source; allowed: pretrained, random")
        if self.architecture is not None:
            raise ValueError("architecture: only for checkpoint sources (a state dict's model)")
        if self.sha256 is not None:
            raise ValueError("sha256: only for checkpoint sources")
        if self.labels is not None:
            raise ValueError("labels: only for checkpoint sources (a public model has its own class names)")
        return self

    @model_validator(mode="after")
    def _placement_is_complete(self) -> ModelEntry:
        if self.placement == "mme":
            if self.dedicated is not None:
                raise ValueError(
                    "dedicated: only with placement: dedicated (the entry is on the multi-model endpoint)"
                )
            return self
        dedicated = self.dedicated or DedicatedPlacement()
        if dedicated.format is None:
            dedicated = dedicated.model_copy(update={"format": self.formats[0]})
        elif dedicated.format not in self.formats:
            allowed = ", ".join(f.value for f in self.formats)
            raise ValueError(
                f"dedicated.format: {dedicated.format.value} is not built for this entry; allowed: {allowed}"
            )
        object.__setattr__(self, "dedicated", dedicated)
        return self

    @property
    def dedicated_format(self) -> Format | None:
        """The format an inference component serves (None for an entry on the multi-model endpoint)."""
        return self.dedicated.format if self.dedicated is not None else None

    @field_validator("formats")
    @classmethod
    def _formats_are_a_non_empty_set(cls, value: tuple[Format, ...]) -> tuple[Format, ...]:
        if not value:
            raise ValueError("at least one of onnx, torchscript, tensorrt")
        if len(set(value)) != len(value):
            raise ValueError("each format at most once")
        return value

    @model_validator(mode="after")
    def _shapes_fit_the_source(self) -> ModelEntry:
        if self.is_image:
            if self.sequence_length is not None:
                raise ValueError("sequence_length: only for text models; use input_shape")
            if self.hf_config is not None:
                raise ValueError("hf_config: only for huggingface sources")
        elif self.source_kind == CHECKPOINT_KIND and self.hf_config is not None:
            raise ValueError(
                "hf_config: only for huggingface sources; a checkpoint folder has its config.json"
            )
        else:
            if self.input_shape is not None:
                raise ValueError("input_shape: only for image models; use sequence_length")
        if self.input_shape is not None:
            problem = shape_problem(self.input_shape, max_batch_size=self.max_batch_size)
            if problem:
                raise ValueError(f"input_shape {list(self.input_shape)}: {problem}")
        for size in self.dynamic_batching.preferred_batch_sizes:
            if size > self.max_batch_size:
                raise ValueError(
                    f"dynamic_batching.preferred_batch_sizes: {size} is above max_batch_size "
                    f"{self.max_batch_size}; allowed 1..{self.max_batch_size}"
                )
        return self

    @property
    def source_kind(self) -> str:
        return self.source.partition(":")[0]

    @property
    def source_id(self) -> str:
        return self.source.partition(":")[2].strip()

    @property
    def checkpoint_location(self) -> CheckpointLocation:
        return CheckpointLocation(self.source_id)

    @property
    def checkpoint_kind(self) -> CheckpointKind | None:
        if self.source_kind != CHECKPOINT_KIND:
            return None
        return checkpoint_kind(self.checkpoint_location, architecture=self.architecture)

    @property
    def architecture_id(self) -> str:
        """The torchvision model of a torchvision source or of a state dict (empty for text models)."""
        if self.source_kind == "torchvision":
            return self.source_id
        return (self.architecture or "").partition(":")[2].strip()

    def build_settings(self) -> dict[str, Any]:
        """The entry's fields that shape what the build makes of it: all but where the endpoint serves it."""
        settings = self.model_dump(mode="json", exclude=set(SERVING_FIELDS))
        if settings.get("labels") is None:
            settings.pop("labels", None)  # entries without labels keep the cache keys they had
        return settings

    @property
    def digest(self) -> str:
        """16 hex digits of the entry's build settings (and its checkpoint's pin) as canonical JSON: it
        changes exactly when what the build makes of this entry can change through the catalog."""
        canonical = json.dumps(self.build_settings(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def pin(self) -> CheckpointPin | None:
        return self._pin

    @property
    def is_image(self) -> bool:
        """An image model: a torchvision architecture, public or from a state dict."""
        return bool(self.architecture_id)

    @property
    def image_shape(self) -> tuple[int, ...]:
        """Per-sample input shape (without the batch dimension) of an image model."""
        return self.input_shape or DEFAULT_IMAGE_SHAPE

    @property
    def text_length(self) -> int:
        return self.sequence_length or DEFAULT_SEQUENCE_LENGTH


class Catalog(_Frozen):
    models: tuple[ModelEntry, ...]
    # The folder that relative checkpoint paths are relative to (the catalog file's), set by the loader.
    _base_dir: Path | None = PrivateAttr(default=None)
    # The `labels:` files read at load, by model name, relative to base_dir (the build runner needs them).
    _label_files: dict[str, str] = PrivateAttr(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        return self._base_dir or Path.cwd()

    @property
    def label_files(self) -> dict[str, str]:
        """The `labels:` files the catalog's entries were read from, by model name (relative paths)."""
        return dict(self._label_files)

    @property
    def checkpoints(self) -> tuple[ModelEntry, ...]:
        return tuple(m for m in self.models if m.source_kind == CHECKPOINT_KIND)

    @model_validator(mode="after")
    def _names_are_unique(self) -> Catalog:
        if not self.models:
            raise ValueError(
                "the 'models' list is empty; allowed: at least one model entry (docs/catalog.md)"
            )
        seen: set[str] = set()
        for entry in self.models:
            if entry.name in seen:
                raise ValueError(f"model '{entry.name}': name: used twice; each name must be unique")
            seen.add(entry.name)
        return self

    def entry(self, name: str) -> ModelEntry:
        for candidate in self.models:
            if candidate.name == name:
                return candidate
        names = [m.name for m in self.models]
        raise CatalogError(f"no model named {quoted(name)} in the catalog; {known_names(name, names)}")

    @property
    def formats(self) -> frozenset[Format]:
        return frozenset(f for m in self.models for f in m.formats)

    def subset(self, names: Collection[str]) -> Catalog:
        """The entries named (in catalog order), with the same folder and pins; CatalogError naming an unknown
        one."""
        unknown = sorted(set(names) - {m.name for m in self.models})
        if unknown:
            hint = did_you_mean(unknown[0], [m.name for m in self.models])
            raise CatalogError(
                f"no model named {quoted(unknown[0])} in the catalog ({len(unknown)} unknown); {hint}"
                "allowed: the names of its models (families expand to <family>-<variant>)"
            )
        wanted = set(names)
        # model_copy keeps the private folder and each entry's pin.
        return self.model_copy(update={"models": tuple(m for m in self.models if m.name in wanted)})


def _describe(error: ValidationError, raw: Any) -> str:
    """pydantic's first error as one line naming the entry: `model 'resnet50': max_batch_size: ...`."""
    errors = error.errors()
    # A misspelt key is both unknown and (often) a required one missing: name the spelling, not the gap.
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    location = list(first["loc"])
    entry = "catalog"
    if len(location) >= 2 and location[0] == "models" and isinstance(location[1], int):
        index = location[1]
        models = raw.get("models") if isinstance(raw, dict) else None
        name = None
        if isinstance(models, list) and index < len(models) and isinstance(models[index], dict):
            name = models[index].get("name")
        entry = f"model {quoted(name)}" if name else f"model #{index + 1}"
        location = location[2:]
    # A whole-entry check names its own fields in its message ("input_shape [...]: ...").
    described = f"{entry}: {describe_error_details(first, location=location)}"
    if first["type"] == "extra_forbidden" and location:
        known = _field_names(location[:-1])
        described += f"; {did_you_mean(str(location[-1]), known)}allowed: {', '.join(known)}"
    return described


def _field_names(path: list[Any]) -> list[str]:
    """The keys allowed at `path` inside a model entry (a family block's own keys at the top)."""
    model: Any = ModelEntry
    for part in path:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            candidates = [a for a in getattr(annotation, "__args__", ()) if isinstance(a, type)]
            annotation = next((a for a in candidates if issubclass(a, BaseModel)), None)
        if annotation is None:
            return []
        model = annotation
    names = list(model.model_fields)
    return [*names, "family", "variants", "overrides"] if model is ModelEntry else names


def _expanded(raw: dict[str, Any], base_dir: Path | None, lock: CatalogLock | None) -> dict[str, Any]:
    models = raw.get("models")
    if not isinstance(models, list) or not any(is_family(m) for m in models):
        return raw
    expanded: list[Any] = []
    for entry in models:
        expanded.extend(expand_family(entry, base_dir=base_dir, lock=lock) if is_family(entry) else [entry])
    return {**raw, "models": expanded}


def _pinned(catalog: Catalog, lock: CatalogLock | None, origin: str) -> Catalog:
    """Each checkpoint entry with its lock file pin (sha256 filled in where the entry has none)."""
    if lock is None or not catalog.checkpoints:
        return catalog
    models = []
    for entry in catalog.models:
        pin = lock.checkpoints.get(entry.name)
        if entry.source_kind != CHECKPOINT_KIND or pin is None or pin.source != entry.source:
            models.append(entry)
            continue
        if entry.sha256 is not None and entry.sha256 != pin.sha256:
            raise CatalogError(
                f"{origin}: model {quoted(entry.name)}: sha256: {entry.sha256[:16]}… in the catalog, "
                f"{pin.sha256[:16]}… in the lock file; allowed: one pin: delete that sha256: line (the lock "
                "file pins every checkpoint; run `triton-mme lock` after changing one)"
            )
        pinned = entry.model_copy(update={"sha256": pin.sha256})
        pinned._pin = pin
        models.append(pinned)
    return catalog.model_copy(update={"models": tuple(models)})


def parse_catalog(
    raw: Any, *, origin: str = "catalog", base_dir: Path | None = None, lock: CatalogLock | None = None
) -> Catalog:
    """Validate a catalog document: family blocks expanded, checkpoints pinned from the lock file."""
    if isinstance(raw, list):
        raw = {"models": raw}
    if not isinstance(raw, dict) or "models" not in raw:
        raise CatalogError(f"{origin}: expected a mapping with a 'models' list")
    label_files: dict[str, str] = {}
    try:
        raw = _expanded(raw, base_dir, lock)
        if base_dir is not None and isinstance(raw.get("models"), list):
            models, label_files = with_label_files_read(raw["models"], base_dir)
            raw = {**raw, "models": models}
        catalog = Catalog.model_validate(raw)
    except (FamilyError, LabelsError) as error:
        raise CatalogError(f"{origin}: {error}") from None
    except ValidationError as error:
        raise CatalogError(f"{origin}: {_describe(error, raw)}") from None
    catalog = _pinned(catalog, lock, origin)
    catalog._base_dir = base_dir
    catalog._label_files = label_files
    return catalog


def load_catalog(path: str | Path) -> Catalog:
    """Read and validate a catalog file; raises CatalogError with a one-line message."""
    path = Path(path)
    try:
        with path.open("rb") as stream:
            text = stream.read(MAX_CATALOG_BYTES + 1)
    except OSError as error:
        raise CatalogError(f"{path}: cannot read the model catalog ({error.strerror})") from None
    try:
        raw = load_yaml(text, where=str(path), max_bytes=MAX_CATALOG_BYTES)
    except DocumentError as error:
        raise CatalogError(str(error)) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise CatalogError(f"{path}: not valid YAML{where}") from None
    try:
        lock = read_lock(lock_path(path))
    except LockError as error:
        raise CatalogError(str(error)) from None
    return parse_catalog(raw, origin=str(path), base_dir=path.resolve().parent, lock=lock)

"""The model catalog: which models to build, in which formats, with which serving settings.

This module is the single schema for `models.yaml`. It imports no deep-learning library, so the
CDK app can read the catalog cheaply. Every field a user may leave out has a default here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from triton_mme.core.bounded import DocumentError, load_yaml
from triton_mme.core.errors import UserError, describe_error_details, quoted
from triton_mme.core.formats import Format, Weights
from triton_mme.core.limits import MAX_BATCH_SIZE, MAX_CATALOG_BYTES, MAX_SEQUENCE_LENGTH, shape_problem
from triton_mme.core.naming import HF_CONFIG_NAME, MODEL_NAME

SOURCE_KINDS = ("torchvision", "huggingface")
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
    preferred_batch_sizes: tuple[Annotated[int, Field(ge=1)], ...] = ()
    max_queue_delay_microseconds: Annotated[int, Field(ge=0, le=10_000_000)] = 100


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
    intra_op_thread_count: Annotated[int, Field(ge=0, le=256)] = 0
    inter_op_thread_count: Annotated[int, Field(ge=0, le=256)] = 0
    tensorrt_accelerator: OnnxRuntimeAccelerator = OnnxRuntimeAccelerator()


class ModelEntry(_Frozen):
    """One model of the catalog; one archive is built per (model, format)."""

    name: str
    source: str
    weights: Weights
    formats: tuple[Format, ...]
    max_batch_size: Annotated[int, Field(ge=1, le=MAX_BATCH_SIZE)]
    input_shape: Annotated[tuple[Annotated[int, Field(ge=1)], ...], Field(min_length=1)] | None = None
    sequence_length: Annotated[int, Field(ge=1, le=MAX_SEQUENCE_LENGTH)] | None = None
    # Hugging Face architecture for `weights: random`: a dict of config fields, or the name of a
    # config shipped with the project (triton_mme/model_build/hf_configs/<name>.json). Never fetched.
    hf_config: dict[str, Any] | str | None = None
    dynamic_batching: DynamicBatching = DynamicBatching()
    instance_count: Annotated[int, Field(ge=1, le=16)] = 1
    # In a multi-model endpoint the first request triggers the load and waits for it, so a warm-up
    # inference only lengthens every cold start; enable it where models are loaded ahead of traffic.
    warmup: bool = False
    tensorrt: TensorRTSettings = TensorRTSettings()
    onnxruntime: OnnxRuntimeSettings = OnnxRuntimeSettings()

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
            raise ValueError("'torchvision:<model>' or 'huggingface:<model id>'")
        return value

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
        if self.source_kind == "torchvision":
            if self.sequence_length is not None:
                raise ValueError("sequence_length: only for huggingface sources; use input_shape")
            if self.hf_config is not None:
                raise ValueError("hf_config: only for huggingface sources")
        else:
            if self.input_shape is not None:
                raise ValueError("input_shape: only for torchvision sources; use sequence_length")
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
    def image_shape(self) -> tuple[int, ...]:
        """Per-sample input shape (without the batch dimension) of an image model."""
        return self.input_shape or DEFAULT_IMAGE_SHAPE

    @property
    def text_length(self) -> int:
        return self.sequence_length or DEFAULT_SEQUENCE_LENGTH


class Catalog(_Frozen):
    models: tuple[ModelEntry, ...]

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
        known = ", ".join(m.name for m in self.models)
        raise CatalogError(f"no model named {quoted(name)} in the catalog; known: {known}")

    @property
    def formats(self) -> frozenset[Format]:
        return frozenset(f for m in self.models for f in m.formats)


def _describe(error: ValidationError, raw: Any) -> str:
    """pydantic's first error as one line naming the entry: `model 'resnet50': max_batch_size: ...`."""
    first = error.errors()[0]
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
    return f"{entry}: {describe_error_details(first, location=location)}"


def parse_catalog(raw: Any, *, origin: str = "catalog") -> Catalog:
    if isinstance(raw, list):
        raw = {"models": raw}
    if not isinstance(raw, dict) or "models" not in raw:
        raise CatalogError(f"{origin}: expected a mapping with a 'models' list")
    try:
        return Catalog.model_validate(raw)
    except ValidationError as error:
        raise CatalogError(f"{origin}: {_describe(error, raw)}") from None


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
    return parse_catalog(raw, origin=str(path))

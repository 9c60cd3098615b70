"""The traffic file: which models are called how often, how long the GPU works per call, and the targets.

YAML or JSON, validated with pydantic; any problem is one line naming the field and what is allowed.

    duration_s: 86400          # the period the rates describe (default one hour)
    service_ms: 8              # GPU time per request where a model names none
    zipf:                      # either a total rate spread over the manifest's archives by Zipf's law ...
      total_rate_per_s: 40
      exponent: 1.0            # 0: every archive equally popular
      format: onnx             # optional: only archives of this format
      order: [resnet50, ...]   # optional: these first (most popular first), then the rest in manifest order
    models:                    # ... or a rate per model (with zipf: per-model service times only)
      - model: resnet50
        format: onnx           # when the model has archives in several formats
        rate_per_s: 5
        service_ms: 12
    targets:
      p99_latency_ms: 1500     # including the cold-start share
      min_cache_hit_rate: 0.95
    seed: 7                    # of the simulated request stream and the load test's model choice

A model is named by its manifest name (with `format` where it has several) or by its TargetModel.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from triton_mme.core.bounded import DocumentError, load_json, load_yaml
from triton_mme.core.errors import UserError, describe_validation_error, quoted
from triton_mme.core.limits import MAX_TRAFFIC_BYTES
from triton_mme.core.manifest import ArchiveRecord, Manifest
from triton_mme.planner.eviction import zipf_popularity

MAX_RATE_PER_S = 1_000_000.0
MAX_DURATION_S = 31 * 86_400
MAX_SERVICE_MS = 600_000.0
DEFAULT_DURATION_S = 3600.0

# Numbers are strict: "1.5" (a quoted YAML string) or true is refused, not read as a number.
Rate = Annotated[float, Field(ge=0, le=MAX_RATE_PER_S, allow_inf_nan=False), Strict()]
ServiceMs = Annotated[float, Field(gt=0, le=MAX_SERVICE_MS, allow_inf_nan=False), Strict()]


class TrafficError(UserError, ValueError):
    """A traffic file that cannot be used; one line naming the field and what is allowed."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Zipf(_Frozen):
    total_rate_per_s: Annotated[float, Field(gt=0, le=MAX_RATE_PER_S, allow_inf_nan=False), Strict()]
    exponent: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False), Strict()] = 1.0
    format: str | None = None
    order: tuple[str, ...] = ()


class ModelTraffic(_Frozen):
    model: str
    format: str | None = None
    rate_per_s: Rate | None = None
    service_ms: ServiceMs | None = None


class Targets(_Frozen):
    p99_latency_ms: Annotated[float, Field(gt=0, allow_inf_nan=False), Strict()] | None = None
    min_cache_hit_rate: Annotated[float, Field(ge=0, le=1), Strict()] | None = None


class TrafficFile(_Frozen):
    duration_s: Annotated[float, Field(gt=0, le=MAX_DURATION_S, allow_inf_nan=False), Strict()] = (
        DEFAULT_DURATION_S
    )
    service_ms: ServiceMs | None = None
    zipf: Zipf | None = None
    models: tuple[ModelTraffic, ...] = ()
    targets: Targets = Targets()
    seed: Annotated[int, Field(ge=0, le=2**32 - 1), Strict()] = 0

    @model_validator(mode="after")
    def _rates_come_from_one_place(self) -> TrafficFile:
        if self.zipf is None and not self.models:
            raise ValueError("give either zipf (a total rate over the catalog) or models (a rate per model)")
        for index, entry in enumerate(self.models):
            if self.zipf is not None and entry.rate_per_s is not None:
                raise ValueError(
                    f"models[{index}].rate_per_s: not allowed with zipf (zipf sets every rate; "
                    "models may then give service_ms only)"
                )
            if self.zipf is None and entry.rate_per_s is None:
                raise ValueError(f"models[{index}].rate_per_s: required field is missing (no zipf given)")
        if self.zipf is None and not any(entry.rate_per_s for entry in self.models):
            raise ValueError("models: every rate_per_s is 0; at least one model must be called")
        return self


def parse_traffic(raw: Any, *, origin: str = "traffic") -> TrafficFile:
    if not isinstance(raw, dict):
        raise TrafficError(f"{origin}: expected a mapping (duration_s, zipf or models, targets, ...)")
    try:
        return TrafficFile.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        hint = _allowed_fields(first["loc"][:-1]) if first["type"] == "extra_forbidden" else ""
        if first["type"] in ("float_type", "int_type") and isinstance(first.get("input"), str):
            hint = "; allowed: a number, written without quotes"
        raise TrafficError(f"{origin}: {describe_validation_error(error)}{hint}") from None


def _allowed_fields(location: tuple[int | str, ...]) -> str:
    """`; allowed: a, b, c`: the fields of the mapping an unknown field was found in."""
    model: Any = TrafficFile
    for part in location:
        if isinstance(part, int):
            continue
        annotation = model.model_fields[part].annotation
        nested = [t for t in (annotation, *getattr(annotation, "__args__", ())) if isinstance(t, type)]
        model = next((t for t in nested if issubclass(t, BaseModel)), None)
        if model is None:
            return ""
    return "; allowed: " + ", ".join(model.model_fields)


def read_traffic(path: Path) -> TrafficFile:
    """A traffic file in YAML, or JSON when it ends in .json."""
    try:
        with path.open("rb") as stream:
            text = stream.read(MAX_TRAFFIC_BYTES + 1)
    except OSError as error:
        raise TrafficError(f"{path}: cannot read the traffic file ({error.strerror})") from None
    load = load_json if path.suffix.lower() == ".json" else load_yaml
    try:
        raw = load(text, where=str(path), max_bytes=MAX_TRAFFIC_BYTES)
    except DocumentError as error:
        raise TrafficError(str(error)) from None
    except (ValueError, yaml.YAMLError) as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        raise TrafficError(f"{path}: not valid {kind}{where}") from None
    return parse_traffic(raw, origin=str(path))


@dataclass(frozen=True)
class Workload:
    """The traffic resolved against a manifest: one entry per called archive, in popularity order."""

    records: tuple[ArchiveRecord, ...]
    rates_per_s: np.ndarray
    # Per archive: the service_ms the traffic file names for it, or None (then the serving report's
    # measurement, else the file's default `service_ms`).
    service_ms: tuple[float | None, ...]
    default_service_ms: float | None
    duration_s: float
    seed: int

    @property
    def total_rate_per_s(self) -> float:
        return float(self.rates_per_s.sum())

    @property
    def popularity(self) -> np.ndarray:
        return self.rates_per_s / self.rates_per_s.sum()

    @cached_property
    def labels(self) -> tuple[str, ...]:
        return tuple(label(record) for record in self.records)


def label(record: ArchiveRecord) -> str:
    return f"{record.name}/{record.format}"


def _find(manifest: Manifest, name: str, format: str | None, where: str) -> ArchiveRecord:
    by_target = next((a for a in manifest.archives if a.target_model == name), None)
    if by_target is not None:
        return by_target
    try:
        return manifest.find(name, format)
    except KeyError as error:
        raise TrafficError(f"{where}: {error.args[0]}") from None


def workload(traffic: TrafficFile, manifest: Manifest, *, origin: str = "traffic") -> Workload:
    """Per-archive rates (and any service times the file gives) for the archives the traffic calls."""
    overrides: dict[str, float | None] = {}
    if traffic.zipf is not None:
        zipf = traffic.zipf
        records = [a for a in manifest.archives if zipf.format is None or a.format == zipf.format]
        if zipf.order:
            # `order` only orders: the named archives first, most popular first, then every other archive
            # of the zipf in the manifest's order.
            first = [
                _find(manifest, name, zipf.format, f"{origin}: zipf.order[{i}]")
                for i, name in enumerate(zipf.order)
            ]
            records = first + [record for record in records if record not in first]
        if not records:
            wanted = f" in format {zipf.format}" if zipf.format else ""
            raise TrafficError(f"{origin}: zipf: the manifest has no archives{wanted}")
        rates = zipf.total_rate_per_s * zipf_popularity(len(records), zipf.exponent)
        for index, entry in enumerate(traffic.models):
            record = _find(manifest, entry.model, entry.format, f"{origin}: models[{index}]")
            if record not in records:
                raise TrafficError(
                    f"{origin}: models[{index}]: {quoted(entry.model)} is not among the zipf archives"
                )
            overrides[record.target_model] = entry.service_ms
    else:
        records, listed = [], []
        for index, entry in enumerate(traffic.models):
            record = _find(manifest, entry.model, entry.format, f"{origin}: models[{index}]")
            if record in records:
                raise TrafficError(f"{origin}: models[{index}]: {label(record)} is listed twice")
            records.append(record)
            listed.append(entry.rate_per_s or 0.0)
            overrides[record.target_model] = entry.service_ms
        rates = np.array(listed, dtype=float)
    seen = [record.target_model for record in records]
    if len(set(seen)) != len(seen):
        raise TrafficError(f"{origin}: zipf.order names an archive twice")
    service = tuple(overrides.get(r.target_model) for r in records)
    return Workload(
        tuple(records),
        np.asarray(rates, dtype=float),
        service,
        traffic.service_ms,
        traffic.duration_s,
        traffic.seed,
    )

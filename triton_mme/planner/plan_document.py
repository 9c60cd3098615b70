"""The plan as a JSON document (`triton-mme plan --json`): pydantic models whose dump is the file, with the
prediction, the price and the one-endpoint-per-model figures as the planner's own models, written a part at a
time (planner.streamed_json); and the comparison (`plan --compare --json`). Strict JSON: an infinite or
undefined figure is written as null."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from itertools import islice
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from triton_mme.core.files import write_atomically
from triton_mme.planner.options import PlanOptions
from triton_mme.planner.outcome import Outcome
from triton_mme.planner.placement import PlacementPlan
from triton_mme.planner.placement_report import ModelPlacementDocument, PlacementDocument, placement_rows
from triton_mme.planner.plan import CandidatePlan, Plan, SingleModelPlan
from triton_mme.planner.prediction import MODEL_OUTCOMES
from triton_mme.planner.prices import Price
from triton_mme.planner.streamed_json import Fields, Items, Part, Rows, write_streamed

PLAN_SCHEMA_VERSION = 1
# A figure computed by the planner: kept as it was computed (an int stays an int in the JSON).
Number = int | float
# Per-model rows made, validated and written at a time: a plan of 10,000 models holds 10,000 rows per
# candidate, which built whole were most of `plan --json`'s memory.
ROWS_PER_CHUNK = 1000


class _Document(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LimitsBytes(_Document):
    """What one instance offers its models; null where a resource never runs out."""

    gpu: Number | None
    host: Number | None
    disk: Number | None


class CandidateDocument(_Document):
    """Everything the table shows for one instance type, per-model predictions included."""

    instance_type: str
    gpu: str | None
    price: Price | None
    limits_bytes: LimitsBytes
    capacity_models: dict[str, int]
    binding_limit: str
    feasible: bool
    problem: str | None
    instances_set_by: str | None
    misses: list[str]
    instances: int | None
    resident_models_per_instance: Number | None
    gpu_utilization: Number | None
    monthly_usd: Number | None
    slow_cold_starts: list[str]
    prediction: Outcome | None
    one_endpoint_per_model: SingleModelPlan

    @classmethod
    def head(cls, sized: CandidatePlan) -> CandidateDocument:
        """The candidate without its prediction's per-model rows (`plan_parts` adds them)."""
        evaluation, candidate = sized.evaluation, sized.candidate
        gpu, host, disk = (None if math.isinf(v) else v for v in candidate.limits.as_tuple()[:3])
        return cls(
            instance_type=candidate.name,
            gpu=candidate.gpu,
            price=candidate.price,
            limits_bytes=LimitsBytes(gpu=gpu, host=host, disk=disk),
            capacity_models=sized.capacity_models,
            binding_limit=sized.binding_limit,
            feasible=sized.feasible,
            problem=sized.problem,
            instances_set_by=sized.sized_by,
            misses=list(evaluation.misses) if evaluation else [],
            instances=evaluation.instances if evaluation else None,
            resident_models_per_instance=evaluation.stats.resident_per_instance if evaluation else None,
            gpu_utilization=evaluation.utilization if evaluation else None,
            monthly_usd=sized.monthly_usd,
            slow_cold_starts=list(evaluation.slow_cold_starts) if evaluation else [],
            prediction=evaluation.outcome(per_model=False) if evaluation else None,
            one_endpoint_per_model=sized.single,
        )


class TrafficDocument(_Document):
    archives: int
    requests_per_s: Number
    duration_s: Number
    gpu_seconds_per_s: Number
    seed: int


class ArchiveDocument(_Document):
    """One archive: its traffic, service time and footprint, with where each figure came from."""

    model: str
    target_model: str
    requests_per_s: Number
    service_ms: Number
    gpu_bytes: Number
    host_bytes: Number
    disk_bytes: Number
    load_s: Number
    download_s: Number
    gpu_source: str
    load_source: str


class NotCandidate(_Document):
    instance_type: str
    reason: str


class PlanDocument(_Document):
    """The plan and the inputs behind it."""

    schema_version: int = PLAN_SCHEMA_VERSION
    region: str
    triton_tag: str
    manifest: str
    traffic: TrafficDocument
    options: PlanOptions
    archives: list[ArchiveDocument]
    candidates: list[CandidateDocument]
    not_candidates: list[NotCandidate]
    recommendation: str

    @classmethod
    def head(cls, plan: Plan, *, triton_tag: str, manifest: str) -> PlanDocument:
        """The plan without its per-model rows: `archives` and each prediction's `models` are left empty
        (`plan_parts` adds them)."""
        served = plan.served
        workload = served.workload
        return cls(
            region=plan.region,
            triton_tag=triton_tag,
            manifest=manifest,
            traffic=TrafficDocument(
                archives=len(workload.records),
                requests_per_s=workload.total_rate_per_s,
                duration_s=workload.duration_s,
                gpu_seconds_per_s=served.total_gpu_seconds_per_s,
                seed=workload.seed,
            ),
            options=plan.options,
            archives=[],
            candidates=[CandidateDocument.head(sized) for sized in plan.candidates],
            not_candidates=[NotCandidate(instance_type=name, reason=reason) for name, reason in plan.skipped],
            recommendation=plan.recommendation(),
        )


class PlacedPlanDocument(PlanDocument):
    """`plan --placement --json`: the plan with the placement comparison (planner.placement)."""

    placement: PlacementDocument


class ComparisonDocument(_Document):
    """`plan --compare`: the prediction beside the load test's measurement."""

    predicted: Outcome
    measured: Outcome


def write_plan(
    path: Path, plan: Plan, *, triton_tag: str, manifest: str, placement: PlacementPlan | None = None
) -> None:
    """`plan --json`: the plan (and the placement) written a part at a time, as `PlanDocument` (or
    `PlacedPlanDocument`) dumps it with indent 2; at most `ROWS_PER_CHUNK` per-model rows are held at once."""
    write_streamed(path, plan_parts(plan, triton_tag=triton_tag, manifest=manifest, placement=placement))


def plan_parts(
    plan: Plan, *, triton_tag: str, manifest: str, placement: PlacementPlan | None = None
) -> Fields:
    head = PlanDocument.head(plan, triton_tag=triton_tag, manifest=manifest)
    parts: dict[str, Part] = {
        "archives": Rows(_ARCHIVES, _chunked(_archive_rows(plan))),
        "candidates": Items(
            _candidate_part(document, sized)
            for document, sized in zip(head.candidates, plan.candidates, strict=True)
        ),
    }
    if placement is None:
        return Fields(head, parts)
    section = PlacementDocument.head(placement)
    parts["placement"] = Fields(section, {"models": Rows(_PLACEMENTS, _chunked(placement_rows(placement)))})
    return Fields(PlacedPlanDocument(**dict(head), placement=section), parts)


def _candidate_part(document: CandidateDocument, sized: CandidatePlan) -> Part:
    if document.prediction is None or sized.evaluation is None:
        return document
    rows = Rows(MODEL_OUTCOMES, sized.evaluation.model_rows(ROWS_PER_CHUNK))
    return Fields(document, {"prediction": Fields(document.prediction, {"models": rows})})


def _archive_rows(plan: Plan) -> Iterator[dict[str, Any]]:
    served = plan.served
    workload = served.workload
    for label, estimate, rate, service in zip(
        workload.labels, served.estimates, workload.rates_per_s, served.service_s, strict=True
    ):
        yield {"model": label, "requests_per_s": rate, "service_ms": 1000 * service, **asdict(estimate)}


def _chunked(rows: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, ROWS_PER_CHUNK)):
        yield chunk


_ARCHIVES = TypeAdapter(list[ArchiveDocument])
_PLACEMENTS = TypeAdapter(list[ModelPlacementDocument])


def write_json(path: Path, document: BaseModel | dict[str, Any]) -> None:
    """Strict JSON (an infinite or undefined figure is written as null), written whole or not at all."""
    if isinstance(document, BaseModel):
        # pydantic's own serializer writes an infinite or undefined float as null (ser_json_inf_nan), and
        # is many times faster than json.dumps with indent on a 10,000-model plan.
        write_atomically(path, document.model_dump_json(indent=2) + "\n")
        return
    write_atomically(path, json.dumps(_finite(document), indent=2, allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value

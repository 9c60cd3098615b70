"""The `plan` command's steps as functions: plan from files, or set a prediction beside a load test."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from triton_mme.core.bounded import DocumentError, read_json
from triton_mme.core.errors import UserError, describe_validation_error
from triton_mme.core.limits import MAX_REPORT_BYTES
from triton_mme.core.platform import PLATFORM
from triton_mme.planner.candidates import (
    Candidate,
    local_candidate,
    sagemaker_candidate,
    sagemaker_candidates,
)
from triton_mme.planner.inputs import read_inputs
from triton_mme.planner.options import PlanOptions
from triton_mme.planner.outcome import LoadTestReport, Outcome
from triton_mme.planner.plan import Plan, plan
from triton_mme.planner.prediction import predict
from triton_mme.planner.prices import PriceBook
from triton_mme.planner.traffic import TrafficFile


class CompareError(UserError, ValueError):
    """A load test file that cannot be compared; one line."""


def plan_from_files(
    traffic: TrafficFile,
    manifest: str,
    options: PlanOptions,
    prices: PriceBook,
    *,
    triton_tag: str,
    instance_types: tuple[str, ...] = (),
    model_budget: int | None = None,
    origin: str = "traffic",
    warn: Callable[[str], None] = print,
) -> Plan:
    """Size the SageMaker candidates (or the local Triton's budget) for the traffic over the manifest."""
    inputs = read_inputs(traffic, manifest, origin=origin, warn=warn)
    skipped: list[tuple[str, str]] = []
    if model_budget is not None:
        candidates = [local_candidate(model_budget)]
    else:
        candidates, skipped = sagemaker_candidates(
            prices, triton_tag, only=instance_types, disk_gb=options.disk_gb
        )
        unknown = sorted(set(instance_types) - {c.name for c in candidates} - {name for name, _ in skipped})
        if unknown:
            raise UserError(
                f"--instance-types {' '.join(unknown)}: not a GPU multi-model instance type of the platform "
                "table (docs/platform.md)"
            )
        if not candidates:
            raise UserError("no instance type to plan for: " + "; ".join(f"{n}: {r}" for n, r in skipped))
    return plan(inputs.served, candidates, options, skipped=skipped, region=prices.region)


@dataclass(frozen=True)
class Comparison:
    predicted: Outcome
    measured: Outcome
    report: LoadTestReport


def read_load_test(path: Path) -> LoadTestReport:
    try:
        return LoadTestReport.model_validate(read_json(path, max_bytes=MAX_REPORT_BYTES))
    except DocumentError as error:
        raise CompareError(str(error)) from None
    except ValidationError as error:
        raise CompareError(
            f"{path}: not a load test result of `triton-mme loadtest` ({describe_validation_error(error)})"
        ) from None


def compare_with(
    path: Path,
    options: PlanOptions,
    *,
    manifest: str | None = None,
    prices: PriceBook | None = None,
    warn: Callable[[str], None] = print,
) -> Comparison:
    """Predict the configuration a load test ran against, with the traffic it drove."""
    report = read_load_test(path)
    measured = report.measured
    configuration = measured.configuration
    inputs = read_inputs(report.traffic, manifest or report.manifest, origin=f"{path}: traffic", warn=warn)
    candidate: Candidate
    if configuration.model_budget is not None:
        candidate = local_candidate(configuration.model_budget, configuration.endpoint)
    elif instance := PLATFORM.gpu_instance_types.get(configuration.instance_type or ""):
        candidate = sagemaker_candidate(instance, prices or PriceBook("us-east-1"), options.disk_gb)
    else:
        raise CompareError(
            f"{path}: instance type {configuration.instance_type!r} is not a GPU multi-model type of the "
            "platform table; run the load test with --instance-type"
        )
    # The prediction is made at the rate the load test reached, for as long as it measured.
    served = inputs.served
    if served.workload.total_rate_per_s <= 0 or measured.request_rate_per_s <= 0:
        raise CompareError(
            f"{path}: the traffic's total rate is {served.workload.total_rate_per_s:g}/s and the measured "
            f"rate {measured.request_rate_per_s:g}/s; a comparison needs both above 0"
        )
    rescaled = served.workload.rates_per_s * (measured.request_rate_per_s / served.workload.total_rate_per_s)
    load = replace(served.workload, rates_per_s=rescaled, duration_s=measured.duration_s)
    evaluation = predict(replace(served, workload=load), candidate, configuration.instances, options)
    predicted = evaluation.outcome().model_copy(update={"configuration": configuration})
    return Comparison(predicted, measured, report)

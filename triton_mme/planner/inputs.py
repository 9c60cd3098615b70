"""Read what a plan starts from: the manifest (a build directory or the model store), the serving report
beside it, the traffic file; and resolve every archive's service time and footprint."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from triton_mme.client.manifest_source import ManifestSource
from triton_mme.core.manifest import Manifest
from triton_mme.core.serving_report import ServingReport
from triton_mme.planner.served import Served
from triton_mme.planner.traffic import TrafficError, TrafficFile, Workload, workload
from triton_mme.sizing.estimate import archive_estimates

BATCH_OF_ONE = 1


@dataclass(frozen=True)
class PlanInputs:
    manifest: Manifest
    report: ServingReport | None
    served: Served
    notes: tuple[str, ...] = ()


def measured_service_ms(report: ServingReport | None, target_model: str) -> float | None:
    """The serving report's batch-1 median latency, where it ran on a GPU."""
    if report is None or report.gpu is None:
        return None
    archive = report.find(target_model)
    if archive is None or not archive.passed:
        return None
    return next((b.latency_p50_ms for b in archive.batches if b.batch_size == BATCH_OF_ONE), None)


def service_seconds(load: Workload, report: ServingReport | None, origin: str) -> np.ndarray:
    """Per archive: the traffic file's figure for it, else the serving report's, else the file's default."""
    found = []
    for record, label, named in zip(load.records, load.labels, load.service_ms, strict=True):
        ms = named or measured_service_ms(report, record.target_model) or load.default_service_ms
        if ms is None:
            raise TrafficError(
                f"{origin}: no service time for {label}: give service_ms (for all, or in its models entry), "
                "or a serving report of the manifest measured on a GPU"
            )
        found.append(ms / 1000)
    return np.array(found)


def read_inputs(
    traffic: TrafficFile,
    manifest_location: str,
    *,
    origin: str = "traffic",
    use_serving_report: bool = True,
    s3: object = None,
    warn: Callable[[str], None] = lambda _: None,
) -> PlanInputs:
    source = ManifestSource(manifest_location, s3=s3)
    manifest = source.manifest()
    report = source.serving_report(manifest) if use_serving_report else None
    notes = []
    if report is not None and report.manifest_sha256 != manifest.sha256:
        notes.append("serving-report.json is for another build (manifest digest differs): not used")
        warn(notes[-1])
        report = None
    elif report is not None and report.gpu is None:
        # Expected after the offline serving check: kept as a note, not printed on every plan (the plan's
        # Footprints line says every figure is an estimate).
        notes.append(f"serving-report.json ran on {report.server}, not a GPU: its figures are not used")
        report = None
    load = workload(traffic, manifest, origin=origin)
    served = Served(load, archive_estimates(load.records, report), service_seconds(load, report, origin))
    return PlanInputs(manifest, report, served, tuple(notes))

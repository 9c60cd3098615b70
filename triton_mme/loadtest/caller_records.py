"""The load test's requests as the callers' per-TargetModel records (the client's embedded metric format), so
`triton-mme models` shows a load test's latency beside the endpoint's loads and evictions."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from triton_mme.client.caller_metrics import LOCAL_ENDPOINT, CallerMetrics, EmfFile
from triton_mme.loadtest.observe import Observation


def write_caller_records(
    path: Path, observations: Iterable[Observation], target_models: tuple[str, ...], *, endpoint: str | None
) -> None:
    """Append the records of the measured requests to `path`, at most 100 latencies a record."""
    metrics = CallerMetrics(
        endpoint=endpoint or LOCAL_ENDPOINT,
        sink=EmfFile(path),
        max_models=len(target_models),
        interval_s=math.inf,
    )
    for observation in observations:
        cold = None if observation.cache_hit is None else not observation.cache_hit
        metrics.record(
            target_models[observation.model],
            observation.latency_s * 1000,
            error=observation.kind != "ok",
            cold=cold,
        )
    metrics.close()

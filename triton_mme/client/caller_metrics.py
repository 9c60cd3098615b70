"""What callers saw, per TargetModel: latency, errors, cold starts, published as CloudWatch metrics (opt-in).

SageMaker's metrics for a multi-model endpoint are per endpoint; a caller knows which model it called and how
long it took. `CallerMetrics` keeps what requests showed per model and writes it in CloudWatch's embedded
metric format (one JSON line per model per interval, to stdout or a file, for an agent or a log group to
turn into metrics) or sends it with PutMetricData. Bounded: at most `max_models` TargetModels are named (each
is a custom metric per metric name; the rest count under "(other)"), and at most one record per model per
`interval_s` (or per 100 latencies, the most one embedded-metric value list holds). Off, it costs nothing:
`invoke.send` only measures when given one.

    metrics = CallerMetrics(endpoint="my-endpoint", sink=EmfFile(Path("metrics.jsonl")))
    reply = send(request, target, endpoint="my-endpoint", metrics=metrics)
    metrics.close()
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from triton_mme.core.model_metrics import (
    CALLER_COLD,
    CALLER_ERRORS,
    CALLER_LATENCY,
    CALLER_NAMESPACE,
    ENDPOINT_DIMENSION,
    MODEL_DIMENSION,
    OTHER_MODELS,
)

DEFAULT_MAX_MODELS = 20
# The endpoint dimension of what a local endpoint's callers record.
LOCAL_ENDPOINT = "local"
DEFAULT_INTERVAL_S = 60.0
# The embedded metric format takes at most 100 values per metric in one record; PutMetricData 150.
MAX_VALUES = 100
# PutMetricData takes at most 1,000 metrics per call.
PUT_BATCH = 1000


@dataclass
class ModelWindow:
    """One model's requests since its last record."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    cold: int = 0


class Sink(Protocol):
    def write(self, records: list[dict[str, Any]]) -> None: ...

    def close(self) -> None: ...


def emf_record(endpoint: str, model: str, window: ModelWindow, timestamp_ms: int) -> dict[str, Any]:
    """One embedded-metric-format record: the model's latencies (as values), errors and cold starts."""
    return {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": CALLER_NAMESPACE,
                    "Dimensions": [[ENDPOINT_DIMENSION, MODEL_DIMENSION]],
                    "Metrics": [
                        {"Name": CALLER_LATENCY, "Unit": "Milliseconds"},
                        {"Name": CALLER_ERRORS, "Unit": "Count"},
                        {"Name": CALLER_COLD, "Unit": "Count"},
                    ],
                }
            ],
        },
        ENDPOINT_DIMENSION: endpoint,
        MODEL_DIMENSION: model,
        CALLER_LATENCY: [round(v, 3) for v in window.latencies_ms],
        CALLER_ERRORS: window.errors,
        CALLER_COLD: window.cold,
    }


class EmfFile:
    """Embedded-metric-format lines appended to a file, or written to stdout (path None)."""

    def __init__(self, path: Path | None = None):
        self._stream: TextIO = path.open("a", encoding="utf-8") if path is not None else sys.stdout
        self._owned = path is not None

    def write(self, records: list[dict[str, Any]]) -> None:
        self._stream.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
        self._stream.flush()

    def close(self) -> None:
        if self._owned:
            self._stream.close()


class PutMetricData:
    """The same figures sent with CloudWatch's PutMetricData, in batches of up to 1,000 metrics."""

    def __init__(self, cloudwatch: Any):
        self.cloudwatch = cloudwatch

    @staticmethod
    def metric_data(record: dict[str, Any]) -> list[dict[str, Any]]:
        dimensions = [{"Name": n, "Value": record[n]} for n in (ENDPOINT_DIMENSION, MODEL_DIMENSION)]
        timestamp = record["_aws"]["Timestamp"] / 1000
        data = []
        if record[CALLER_LATENCY]:
            data.append(
                {
                    "MetricName": CALLER_LATENCY,
                    "Dimensions": dimensions,
                    "Timestamp": timestamp,
                    "Values": record[CALLER_LATENCY],
                    "Unit": "Milliseconds",
                }
            )
        for name in (CALLER_ERRORS, CALLER_COLD):
            data.append(
                {
                    "MetricName": name,
                    "Dimensions": dimensions,
                    "Timestamp": timestamp,
                    "Value": record[name],
                    "Unit": "Count",
                }
            )
        return data

    def write(self, records: list[dict[str, Any]]) -> None:
        data = [datum for record in records for datum in self.metric_data(record)]
        for start in range(0, len(data), PUT_BATCH):
            self.cloudwatch.put_metric_data(
                Namespace=CALLER_NAMESPACE, MetricData=data[start : start + PUT_BATCH]
            )

    def close(self) -> None:
        pass


class CallerMetrics:
    """Per-TargetModel figures of the requests a caller sent; thread-safe."""

    def __init__(
        self,
        *,
        endpoint: str,
        sink: Sink,
        max_models: int = DEFAULT_MAX_MODELS,
        interval_s: float = DEFAULT_INTERVAL_S,
        cold_threshold_ms: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ):
        if max_models < 1:
            raise ValueError(f"max_models: {max_models} is not allowed; at least 1")
        self.endpoint = endpoint
        self.sink = sink
        self.max_models = max_models
        self.interval_s = interval_s
        self.cold_threshold_ms = cold_threshold_ms
        self._clock = clock
        self._wall_clock = wall_clock
        self._windows: dict[str, ModelWindow] = {}
        self._named: set[str] = set()
        self._last_flush = clock()
        self._lock = threading.Lock()

    def _name(self, target_model: str) -> str:
        if target_model in self._named:
            return target_model
        if len(self._named) < self.max_models:
            self._named.add(target_model)
            return target_model
        return OTHER_MODELS

    def record(
        self, target_model: str, latency_ms: float, *, error: bool = False, cold: bool | None = None
    ) -> None:
        """One request: its latency, whether it failed, whether it loaded its model (None: by threshold)."""
        if cold is None and self.cold_threshold_ms is not None and not error:
            cold = latency_ms >= self.cold_threshold_ms
        ready: list[dict[str, Any]] = []
        with self._lock:
            name = self._name(target_model)
            window = self._windows.setdefault(name, ModelWindow())
            if error:
                window.errors += 1
            else:
                window.latencies_ms.append(latency_ms)
            window.cold += bool(cold)
            if len(window.latencies_ms) >= MAX_VALUES:
                ready.append(self._take(name))
            if self._clock() - self._last_flush >= self.interval_s:
                ready += self._take_all()
        if ready:
            self.sink.write(ready)

    def _take(self, name: str) -> dict[str, Any]:
        window = self._windows.pop(name)
        return emf_record(self.endpoint, name, window, int(self._wall_clock() * 1000))

    def _take_all(self) -> list[dict[str, Any]]:
        self._last_flush = self._clock()
        return [self._take(name) for name in list(self._windows)]

    def flush(self) -> None:
        with self._lock:
            ready = self._take_all()
        if ready:
            self.sink.write(ready)

    def close(self) -> None:
        self.flush()
        self.sink.close()


def caller_metrics(
    *, out: str | None, cloudwatch: bool, endpoint: str | None, region: str | None, **options: Any
) -> CallerMetrics | None:
    """The recorder a command line asks for: `out` a file of embedded-metric-format lines ("-": stdout),
    `cloudwatch` PutMetricData; None when neither (metrics off)."""
    if out is None and not cloudwatch:
        return None
    if cloudwatch:
        import boto3

        sink: Sink = PutMetricData(boto3.client("cloudwatch", region_name=region))
    else:
        sink = EmfFile(None if out == "-" else Path(str(out)))
    return CallerMetrics(endpoint=endpoint or LOCAL_ENDPOINT, sink=sink, **options)

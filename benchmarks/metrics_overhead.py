"""Part of 8.: what per-model caller metrics cost an invocation, on and off.

In one process, `invoke.send` calls InvokeEndpoint (boto3, signed, over loopback to the stand-in of
benchmarks/invoke_stub.py) in three ways, interleaved round by round: the transport alone (what `send` does
with nothing around it), `send` with metrics off (`metrics=None`, the default), and `send` with metrics on
(embedded-metric-format records appended to a file). The medians of the rounds' per-request times give the
overhead of "on" over "off", and of "off" over the transport alone.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.results import Section

ENDPOINT = "benchmark-endpoint"
TARGET_MODEL = "resnet50-onnx-0123456789abcdef.tar.gz"
RECORD_CALLS = 100_000


def _round(call: Callable[[], object], requests: int) -> float:
    started = time.perf_counter()
    for _ in range(requests):
        call()
    return (time.perf_counter() - started) / requests * 1000


def measure(section: Section, stub_url: str, scratch: Path, *, rounds: int, requests: int) -> None:
    import boto3
    import numpy as np

    from triton_mme.client import invoke
    from triton_mme.client.caller_metrics import CallerMetrics, EmfFile
    from triton_mme.client.payloads import encode_request
    from triton_mme.client.transport import ONE_ATTEMPT, invoke_endpoint

    runtime = boto3.client(
        "sagemaker-runtime",
        endpoint_url=stub_url,
        region_name="us-east-1",
        aws_access_key_id="benchmark",
        aws_secret_access_key="benchmark",
        config=ONE_ATTEMPT,
    )
    request = encode_request({"input": np.zeros((1, 3, 224, 224), np.float32)}, ["output"], binary=True)
    target = invoke.Target(TARGET_MODEL)
    records = scratch / "caller-metrics.jsonl"
    metrics = CallerMetrics(endpoint=ENDPOINT, sink=EmfFile(records))
    ways: dict[str, Callable[[], object]] = {
        "bare": lambda: invoke_endpoint(runtime, ENDPOINT, TARGET_MODEL, request),
        "off": lambda: invoke.send(request, target, endpoint=ENDPOINT, runtime=runtime),
        "on": lambda: invoke.send(request, target, endpoint=ENDPOINT, runtime=runtime, metrics=metrics),
    }
    for call in ways.values():
        _round(call, requests)  # untimed warm-up of each way
    times: dict[str, list[float]] = {way: [] for way in ways}
    for _ in range(rounds):
        for way, call in ways.items():
            times[way].append(_round(call, requests))
    metrics.close()
    written = sum(len(line) > 0 for line in records.read_text().splitlines())
    if written == 0:
        raise RuntimeError("metrics on wrote no record")
    labels = {"bare": "transport alone", "off": "send, metrics off", "on": "send, metrics on (EMF file)"}
    for way, label in labels.items():
        section.add_median(f"metrics.{way}", f"InvokeEndpoint per request: {label}", times[way], "ms")
    section.ratio("metrics.on_off", "metrics on / off, per request", "metrics.on", "metrics.off")
    section.ratio(
        "metrics.off_bare", "metrics off / transport alone, per request", "metrics.off", "metrics.bare"
    )
    # The loopback round trip varies by more than 2 % from round to round on a shared machine, so the cost
    # of "on" is also timed alone: what recording adds to each request, records written to a file included.
    recorder = CallerMetrics(endpoint=ENDPOINT, sink=EmfFile(scratch / "record-cost.jsonl"))
    started = time.perf_counter()
    for i in range(RECORD_CALLS):
        recorder.record(TARGET_MODEL, 10.0 + i % 7, cold=i % 50 == 0)
    recorder.close()
    per_call_ms = (time.perf_counter() - started) / RECORD_CALLS * 1000
    section.add("metrics.record", "recording one request (metrics on)", per_call_ms, "ms")
    section.ratio("metrics.cost", "recording / send with metrics off", "metrics.record", "metrics.off")
    section.target("Caller metrics on: overhead", "metrics.cost", "<=", 0.02)
    section.target("Caller metrics off: free", "metrics.off_bare", "<=", 1.02)
    section.notes.append(
        f"Caller metrics: {rounds} interleaved rounds of {requests} InvokeEndpoint calls per way in one "
        f"process (boto3 to the loopback stand-in, a 1x3x224x224 FP32 binary request); {written} records "
        "written. "
        f"Medians of the rounds (spread {statistics.pstdev(times['on']):.3f} ms for on); recording timed "
        f"alone over {RECORD_CALLS:,} requests."
    )

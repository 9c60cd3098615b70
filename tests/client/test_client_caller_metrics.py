"""Per-TargetModel caller metrics: embedded-metric-format records, bounded in models and in rate, the local
endpoint's cache header as the cold flag, PutMetricData batches (botocore's Stubber), nothing when off."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from client_support import LoopbackHandler, loopback_server

from triton_mme.client import invoke
from triton_mme.client.caller_metrics import (
    MAX_VALUES,
    CallerMetrics,
    EmfFile,
    PutMetricData,
    caller_metrics,
)
from triton_mme.client.payloads import EncodedRequest
from triton_mme.client.transport import TransportError
from triton_mme.core.model_metrics import OTHER_MODELS
from triton_mme.observability.caller_records import read_caller_records


class ListSink:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, records: list[dict[str, Any]]) -> None:
        self.records += records

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_record_is_embedded_metric_format_per_model() -> None:
    sink = ListSink()
    metrics = CallerMetrics(endpoint="e", sink=sink, wall_clock=lambda: 1700000000.0)
    metrics.record("a.tar.gz", 12.5, cold=True)
    metrics.record("a.tar.gz", 3.0, cold=False)
    metrics.record("a.tar.gz", 80.0, error=True)
    metrics.close()
    (record,) = sink.records
    directive = record["_aws"]["CloudWatchMetrics"][0]
    assert record["_aws"]["Timestamp"] == 1700000000000
    assert directive["Namespace"] == "TritonMme/Callers"
    assert directive["Dimensions"] == [["EndpointName", "TargetModel"]]
    assert {m["Name"] for m in directive["Metrics"]} == {"Latency", "Errors", "ColdStarts"}
    assert (record["EndpointName"], record["TargetModel"]) == ("e", "a.tar.gz")
    assert (record["Latency"], record["Errors"], record["ColdStarts"]) == ([12.5, 3.0], 1, 1)


def test_past_max_models_the_rest_are_one_other_value() -> None:
    sink = ListSink()
    metrics = CallerMetrics(endpoint="e", sink=sink, max_models=2)
    for model in ("a", "b", "c", "d", "a"):
        metrics.record(model, 1.0)
    metrics.close()
    assert sorted(r["TargetModel"] for r in sink.records) == sorted(["a", "b", OTHER_MODELS])
    other = next(r for r in sink.records if r["TargetModel"] == OTHER_MODELS)
    assert len(other["Latency"]) == 2


def test_at_most_one_record_per_model_per_interval_or_per_hundred_values() -> None:
    sink, clock = ListSink(), Clock()
    metrics = CallerMetrics(endpoint="e", sink=sink, interval_s=60, clock=clock)
    for _ in range(MAX_VALUES * 3 + 1):
        metrics.record("a", 1.0)
    assert len(sink.records) == 3, "a record holds at most 100 latencies"
    clock.now = 59
    metrics.record("b", 1.0)
    assert len(sink.records) == 3, "nothing else before the interval is over"
    clock.now = 60
    metrics.record("b", 1.0)
    assert sorted(r["TargetModel"] for r in sink.records[3:]) == ["a", "b"]


def test_the_latency_threshold_marks_cold_where_the_endpoint_does_not_say() -> None:
    sink = ListSink()
    metrics = CallerMetrics(endpoint="e", sink=sink, cold_threshold_ms=1000)
    metrics.record("a", 1500.0)
    metrics.record("a", 20.0)
    metrics.record("a", 5.0, cold=True)  # the endpoint's own word wins
    metrics.close()
    assert sink.records[0]["ColdStarts"] == 2


def test_the_file_reads_back_as_percentiles(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    metrics = CallerMetrics(endpoint="e", sink=EmfFile(path))
    for value in range(1, 101):
        metrics.record("a", float(value))
    metrics.close()
    figures = read_caller_records(path.read_text().splitlines(), where=str(path))["a"]
    assert figures.percentile(0.5) == pytest.approx(50.5)
    assert figures.percentile(0.99) == pytest.approx(99.01)


def test_put_metric_data_sends_values_and_counts() -> None:
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    stub = Stubber(cloudwatch)
    dimensions = [{"Name": "EndpointName", "Value": "e"}, {"Name": "TargetModel", "Value": "a"}]
    stub.add_response(
        "put_metric_data",
        {},
        {
            "Namespace": "TritonMme/Callers",
            "MetricData": [
                {"MetricName": "Latency", "Dimensions": dimensions, "Timestamp": 1700000000.0,
                 "Values": [4.0, 6.0], "Unit": "Milliseconds"},
                {"MetricName": "Errors", "Dimensions": dimensions, "Timestamp": 1700000000.0,
                 "Value": 0, "Unit": "Count"},
                {"MetricName": "ColdStarts", "Dimensions": dimensions, "Timestamp": 1700000000.0,
                 "Value": 1, "Unit": "Count"},
            ],
        },
    )  # fmt: skip
    metrics = CallerMetrics(endpoint="e", sink=PutMetricData(cloudwatch), wall_clock=lambda: 1700000000.0)
    with stub:
        metrics.record("a", 4.0, cold=True)
        metrics.record("a", 6.0)
        metrics.close()
        stub.assert_no_pending_responses()


def test_off_unless_asked_for() -> None:
    assert caller_metrics(out=None, cloudwatch=False, endpoint=None, region=None) is None


class _Endpoint(LoopbackHandler):
    def do_POST(self) -> None:
        self.read_body()
        status = 400 if "broken" in self.path else 200
        self.answer(status, "application/json", b"{}", {"X-Local-Model-Cache": "miss"})


@pytest.fixture
def local_url() -> Iterator[str]:
    with loopback_server(_Endpoint) as url:
        yield url


def test_send_records_latency_the_cache_header_and_errors(local_url: str) -> None:
    sink = ListSink()
    metrics = CallerMetrics(endpoint="local", sink=sink)
    request = EncodedRequest(b"{}", "application/json")
    invoke.send(request, invoke.Target("good.tar.gz"), local_url=local_url, metrics=metrics)
    with pytest.raises(TransportError):
        invoke.send(request, invoke.Target("broken.tar.gz"), local_url=local_url, metrics=metrics)
    metrics.close()
    by_model = {r["TargetModel"]: r for r in sink.records}
    assert by_model["good.tar.gz"]["ColdStarts"] == 1 and len(by_model["good.tar.gz"]["Latency"]) == 1
    assert by_model["broken.tar.gz"]["Errors"] == 1 and by_model["broken.tar.gz"]["Latency"] == []
    assert json.dumps(sink.records)  # serializable as written

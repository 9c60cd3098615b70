"""SageMaker's own count: ModelCacheHit over the measured window (botocore's Stubber, no AWS)."""

from __future__ import annotations

import datetime as dt

import boto3
import pytest
from botocore.stub import Stubber

from triton_mme.loadtest import commands
from triton_mme.loadtest.cloudwatch import (
    DEFAULT_VARIANT,
    CloudWatchError,
    model_cache_hit,
    wait_for_model_cache_hit,
)
from triton_mme_cdk.constructs.endpoint.triton_endpoint import VARIANT_NAME

START = dt.datetime(2026, 12, 1, 10, 0, 30, tzinfo=dt.UTC)
END = dt.datetime(2026, 12, 1, 10, 2, 10, tzinfo=dt.UTC)
EXPECTED = {
    "Namespace": "AWS/SageMaker",
    "MetricName": "ModelCacheHit",
    "Dimensions": [{"Name": "EndpointName", "Value": "ep"}, {"Name": "VariantName", "Value": "AllTraffic"}],
    "StartTime": dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC),
    "EndTime": dt.datetime(2026, 12, 1, 10, 3, tzinfo=dt.UTC),
    "Period": 60,
    "Statistics": ["Average", "SampleCount"],
}


def _client() -> tuple[object, Stubber]:
    client = boto3.client(
        "cloudwatch", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    return client, Stubber(client)


def test_the_variant_is_the_endpoint_constructs() -> None:
    assert DEFAULT_VARIANT == commands.DEFAULT_VARIANT == VARIANT_NAME


def test_the_hit_rate_is_the_average_weighted_by_requests() -> None:
    client, stubber = _client()
    points = [
        {"Timestamp": START, "Average": 0.5, "SampleCount": 100.0, "Unit": "None"},
        {"Timestamp": END, "Average": 1.0, "SampleCount": 300.0, "Unit": "None"},
    ]
    stubber.add_response("get_metric_statistics", {"Datapoints": points}, EXPECTED)
    with stubber:
        count = model_cache_hit(client, "ep", "AllTraffic", START, END)
    assert count is not None and count.cache_hit_rate == pytest.approx(0.875) and count.requests == 400
    assert count.source == "CloudWatch AWS/SageMaker ModelCacheHit"


def test_no_datapoint_yet_is_no_count_and_waiting_asks_again() -> None:
    client, stubber = _client()
    stubber.add_response("get_metric_statistics", {"Datapoints": []}, EXPECTED)
    stubber.add_response(
        "get_metric_statistics",
        {"Datapoints": [{"Timestamp": START, "Average": 0.9, "SampleCount": 50.0}]},
        EXPECTED,
    )
    with stubber:
        count = wait_for_model_cache_hit(
            client, "ep", "AllTraffic", START, END, expected_requests=50, wait_s=1, poll_s=0.01
        )
        stubber.assert_no_pending_responses()
    assert count is not None and count.cache_hit_rate == 0.9


def test_an_error_is_one_line() -> None:
    client, stubber = _client()
    stubber.add_client_error(
        "get_metric_statistics", "AccessDenied", "no cloudwatch:GetMetricStatistics", 403
    )
    with stubber, pytest.raises(CloudWatchError) as caught:
        model_cache_hit(client, "ep", "AllTraffic", START, END)
    assert str(caught.value) == (
        "CloudWatch ModelCacheHit of ep/AllTraffic: AccessDenied: no cloudwatch:GetMetricStatistics"
    )

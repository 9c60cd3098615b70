"""SageMaker's own count of cache hits: the ModelCacheHit metric over the measured window.

ModelCacheHit (namespace AWS/SageMaker, dimensions EndpointName and VariantName) is 1 for an InvokeEndpoint
request whose model was already loaded and 0 otherwise, at one-minute resolution (AWS, "CloudWatch metrics
for multi-model endpoint deployments"): its Average is the hit rate, its SampleCount the requests. The
window is widened to whole minutes, so requests just outside the measured window can count.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from triton_mme.core.errors import UserError, describe_aws_error
from triton_mme.planner.outcome import ServerCount

NAMESPACE = "AWS/SageMaker"
METRIC = "ModelCacheHit"
PERIOD_S = 60
# The endpoint construct's variant (triton_mme_cdk/constructs/endpoint/triton_endpoint.py VARIANT_NAME; a test
# keeps them equal).
DEFAULT_VARIANT = "AllTraffic"


class CloudWatchError(UserError, RuntimeError):
    """The metric could not be read; one line."""


def model_cache_hit(
    client: Any, endpoint: str, variant: str, start: dt.datetime, end: dt.datetime
) -> ServerCount | None:
    """The request-weighted ModelCacheHit average between start and end; None when no datapoint exists yet."""
    begin = start.replace(second=0, microsecond=0)
    finish = end.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
    try:
        answer = client.get_metric_statistics(
            Namespace=NAMESPACE,
            MetricName=METRIC,
            Dimensions=[
                {"Name": "EndpointName", "Value": endpoint},
                {"Name": "VariantName", "Value": variant},
            ],
            StartTime=begin,
            EndTime=finish,
            Period=PERIOD_S,
            Statistics=["Average", "SampleCount"],
        )
    except Exception as error:  # botocore's ClientError and friends: one line either way
        raise CloudWatchError(
            f"CloudWatch {METRIC} of {endpoint}/{variant}: {describe_aws_error(error)}"
        ) from None
    points = answer.get("Datapoints", [])
    samples = sum(float(p["SampleCount"]) for p in points)
    if not samples:
        return None
    hits = sum(float(p["Average"]) * float(p["SampleCount"]) for p in points)
    return ServerCount(
        source=f"CloudWatch {NAMESPACE} {METRIC}", cache_hit_rate=hits / samples, requests=samples
    )


def wait_for_model_cache_hit(
    client: Any,
    endpoint: str,
    variant: str,
    start: dt.datetime,
    end: dt.datetime,
    *,
    expected_requests: float,
    wait_s: float,
    poll_s: float = 30.0,
) -> ServerCount | None:
    """Poll until the metric has counted (nearly) every measured request, or `wait_s` has passed."""
    deadline = time.monotonic() + wait_s
    while True:
        count = model_cache_hit(client, endpoint, variant, start, end)
        complete = count is not None and (count.requests or 0) >= 0.9 * expected_requests
        if complete or time.monotonic() + poll_s > deadline:
            return count
        time.sleep(poll_s)

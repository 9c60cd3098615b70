"""Check 4, the metrics arrive: what the dashboard, alarms and scaling read exists, and they are wired up.

- Each metric of REQUIRED_METRICS has a datapoint with the variant's dimensions (core.platform: the same
  namespaces and dimensions the alarms, dashboard and scaling policy are built with) since the run's
  invocations began, within a bounded wait (CloudWatch publishes SageMaker's metrics a few minutes late).
  A metric that never arrives names the dimensions ListMetrics does know it by.
- Every alarm of the stack exists, has an action, watches this variant and is not in ALARM.
- The scalable target is registered with the stack's min and max and its policies are attached; the GPU
  policy tracks GPUUtilization with the variant's dimensions.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from triton_mme.acceptance.report import METRICS, Check, compared, failed, passed
from triton_mme.acceptance.stack import DeployedSettings
from triton_mme.acceptance.timing import Timing
from triton_mme.core.platform import PLATFORM

REQUIRED_METRICS = {
    "GPUUtilization": PLATFORM.limits.metrics.instance_namespace,
    "GPUMemoryUtilization": PLATFORM.limits.metrics.instance_namespace,
    "LoadedModelCount": PLATFORM.limits.metrics.instance_namespace,
    "ModelCacheHit": PLATFORM.limits.metrics.invocation_namespace,
    "ModelLatency": PLATFORM.limits.metrics.invocation_namespace,
    "Invocations": PLATFORM.limits.metrics.invocation_namespace,
}
POLL_INTERVAL_S = 30.0
PERIOD_S = 60
# Datapoints are stamped with the start of their minute: look from a minute before the invocations.
LOOKBACK = dt.timedelta(minutes=1)
GPU_TRACKED = "GPUUtilization tracked with this variant's dimensions"
WIRING_FIX = "deploy the stack again (`make deploy`); the alarm or target was changed outside it"


def variant_dimensions(settings: DeployedSettings) -> list[dict[str, str]]:
    values = (settings.endpoint_name, settings.variant_name)
    return [
        {"Name": name, "Value": value}
        for name, value in zip(PLATFORM.limits.metrics.variant_dimensions, values, strict=True)
    ]


def _queries(settings: DeployedSettings) -> list[dict[str, Any]]:
    return [
        {
            "Id": f"m{index}",
            "Label": name,
            "MetricStat": {
                "Metric": {
                    "Namespace": namespace,
                    "MetricName": name,
                    "Dimensions": variant_dimensions(settings),
                },
                "Period": PERIOD_S,
                "Stat": "SampleCount",
            },
            "ReturnData": True,
        }
        for index, (name, namespace) in enumerate(REQUIRED_METRICS.items())
    ]


def _arrived(
    cloudwatch: Any, queries: list[dict[str, Any]], start: dt.datetime, end: dt.datetime
) -> set[str]:
    labels = {query["Id"]: query["Label"] for query in queries}
    seen: set[str] = set()
    token = None
    while True:
        request: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
        if token:
            request["NextToken"] = token
        response = cloudwatch.get_metric_data(**request)
        seen |= {labels[r["Id"]] for r in response.get("MetricDataResults", []) if r.get("Values")}
        token = response.get("NextToken")
        if not token:
            return seen


def check_metrics_arrive(
    settings: DeployedSettings, cloudwatch: Any, timing: Timing, since: dt.datetime, wait_s: float
) -> list[Check]:
    """Poll GetMetricData until every required metric has a datapoint or `wait_s` has passed."""
    queries = _queries(settings)
    started = timing.now()
    seen: set[str] = set()
    while True:
        seen |= _arrived(cloudwatch, queries, since - LOOKBACK, timing.wall() + LOOKBACK)
        waited = timing.now() - started
        if seen >= set(REQUIRED_METRICS) or waited + POLL_INTERVAL_S > wait_s:
            break
        timing.sleep(POLL_INTERVAL_S)
    dimensions = ", ".join(f"{d['Name']}={d['Value']}" for d in variant_dimensions(settings))
    checks = []
    for name, namespace in REQUIRED_METRICS.items():
        expected = f"{namespace} {name} with {dimensions}"
        if name in seen:
            checks.append(passed(METRICS, name, expected=expected, seen=f"datapoints after {waited:.0f} s"))
            continue
        checks.append(
            failed(
                METRICS,
                name,
                expected=expected,
                seen=f"no datapoint within {waited:.0f} s; "
                f"{_known_as(cloudwatch, namespace, name, settings)}",
                fix="the dashboard, the alarms and the scaling policy read nothing for it: compare the "
                "dimensions ListMetrics shows with core.platform, and wait longer with --metrics-wait-s "
                "(docs/acceptance.md#metrics)",
            )
        )
    return checks


def _known_as(cloudwatch: Any, namespace: str, name: str, settings: DeployedSettings) -> str:
    """The dimensions CloudWatch knows the metric by for this endpoint (how a wrong dimension shows)."""
    found = cloudwatch.list_metrics(
        Namespace=namespace,
        MetricName=name,
        Dimensions=[{"Name": PLATFORM.limits.metrics.variant_dimensions[0], "Value": settings.endpoint_name}],
    ).get("Metrics", [])
    if not found:
        return "ListMetrics knows no such metric for this endpoint"
    shown = sorted({", ".join(f"{d['Name']}={d['Value']}" for d in m.get("Dimensions", [])) for m in found})
    return f"ListMetrics knows it with: {'; '.join(shown)}"


def check_alarms(settings: DeployedSettings, cloudwatch: Any) -> list[Check]:
    alarms = {
        a["AlarmName"]: a
        for a in cloudwatch.describe_alarms(AlarmNames=list(settings.alarm_names)).get("MetricAlarms", [])
    }
    wanted = sorted((d["Name"], d["Value"]) for d in variant_dimensions(settings))
    checks = []
    for name in settings.alarm_names:
        expected = "exists, has an action, watches this variant, not in ALARM"
        alarm = alarms.get(name)
        if alarm is None:
            checks.append(
                failed(METRICS, f"alarm {name}", expected=expected, seen="no such alarm", fix=WIRING_FIX)
            )
            continue
        problems = []
        if not alarm.get("ActionsEnabled", False) or not alarm.get("AlarmActions"):
            problems.append("no alarm action")
        if sorted((d["Name"], d["Value"]) for d in alarm.get("Dimensions", [])) != wanted:
            problems.append(f"dimensions {alarm.get('Dimensions')}")
        state = alarm.get("StateValue")
        if state == "ALARM":
            problems.append(
                f"in ALARM since {alarm.get('StateUpdatedTimestamp')}: {alarm.get('StateReason')}"
            )
        if problems:
            fix = (
                "the endpoint is unhealthy by this alarm's measure: read the dashboard and the endpoint's "
                "logs"
                if state == "ALARM" and len(problems) == 1
                else WIRING_FIX
            )
            checks.append(
                failed(METRICS, f"alarm {name}", expected=expected, seen="; ".join(problems), fix=fix)
            )
        else:
            checks.append(
                passed(
                    METRICS, f"alarm {name}", expected=expected, seen=f"{state}, {alarm.get('MetricName')}"
                )
            )
    return checks


def check_scaling(settings: DeployedSettings, autoscaling: Any) -> list[Check]:
    scaling = settings.scaling
    if scaling is None:
        return [
            passed(METRICS, "scaling", expected="no autoscaling", seen="the stack sets autoscaling=false")
        ]
    where = {"ServiceNamespace": scaling.service_namespace, "ScalableDimension": scaling.scalable_dimension}
    targets = autoscaling.describe_scalable_targets(ResourceIds=[scaling.resource_id], **where).get(
        "ScalableTargets", []
    )
    if not targets:
        return [
            failed(
                METRICS,
                "scaling",
                expected=f"{scaling.resource_id} registered",
                seen="no scalable target",
                fix=WIRING_FIX,
            )
        ]
    target = targets[0]
    policies = autoscaling.describe_scaling_policies(ResourceId=scaling.resource_id, **where).get(
        "ScalingPolicies", []
    )
    tracked = [
        p["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]
        for p in policies
        if "CustomizedMetricSpecification" in p.get("TargetTrackingScalingPolicyConfiguration", {})
    ]
    wanted = sorted((d["Name"], d["Value"]) for d in variant_dimensions(settings))
    gpu = [
        f"{m.get('MetricName')} {sorted((d['Name'], d['Value']) for d in m.get('Dimensions', [])) == wanted}"
        for m in tracked
    ]
    return [
        compared(
            METRICS,
            "scaling-bounds",
            expected=f"min {scaling.min_capacity}, max {scaling.max_capacity}",
            seen=f"min {target.get('MinCapacity')}, max {target.get('MaxCapacity')}",
            fix=WIRING_FIX,
        ),
        compared(
            METRICS,
            "scaling-policies",
            expected=f"{scaling.policy_count} policies, {GPU_TRACKED}",
            seen=f"{len(policies)} policies, {GPU_TRACKED}"
            if gpu == ["GPUUtilization True"]
            else f"{len(policies)} policies, custom metrics tracked: {gpu or 'none'}",
            fix=WIRING_FIX,
        ),
    ]

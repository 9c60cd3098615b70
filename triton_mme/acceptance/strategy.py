"""Check 3, the last update followed its strategy: the endpoint's deployment events, as the stack keeps them.

DescribeEndpoint says which DeploymentConfig the last update asked for (LastDeploymentConfig, compared in
check 2) but not what SageMaker did: an endpoint its guardrails exclude is updated all at once without an
error. The stack's DeploymentEvents rule keeps every "SageMaker Endpoint Deployment State Change" event of
the endpoint in a log group (triton_mme_cdk/constructs/deployment_events.py); each carries the pending
deployment's
variant status (SageMaker developer guide, "Events that Amazon SageMaker AI sends to Amazon EventBridge"):
`ActivatingTraffic` "Activating traffic on canary capacity of 1 instance(s).", `Baking` "Baking for 600
seconds (TerminationWaitInSeconds) with traffic enabled on canary capacity of 1 instance(s).", and the same
on "full capacity". A canary update shows a canary stage; a linear or rolling one several traffic steps;
one that fell back shows traffic turned on for the full capacity in one step.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

from triton_mme.acceptance.live import LiveEndpoint
from triton_mme.acceptance.report import STRATEGY, Check, failed, passed
from triton_mme.acceptance.stack import ROLLING_POLICY, ROUTING_POLICY, DeployedSettings

ACTIVATING, BAKING = "ActivatingTraffic", "Baking"
BAKE_SECONDS = re.compile(r"Baking for (?P<seconds>\d+) seconds")
FELL_BACK = "SageMaker updated all at once"
FELL_BACK_FIX = (
    "SageMaker's deployment guardrails excluded this endpoint and updated it without the configured steps "
    "or rollback alarms; see docs/acceptance.md#strategy (choose strategy=all-at-once to say so, or remove "
    "what excludes the endpoint)"
)


@dataclass(frozen=True)
class Stage:
    status: str
    message: str

    @property
    def partial(self) -> bool:
        """Traffic on part of the new fleet (a canary or a step), not on its full capacity."""
        return "full capacity" not in self.message.lower()


def _millis(value: Any) -> int:
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    return int(float(value) * 1000)


def deployment_stages(logs: Any, log_group: str, config_name: str, since: Any) -> list[Stage]:
    """The distinct variant stages of the update to `config_name`, in the order SageMaker reported them."""
    stages: list[Stage] = []
    paginator = logs.get_paginator("filter_log_events")
    for page in paginator.paginate(logGroupName=log_group, startTime=_millis(since)):
        for record in page.get("events", []):
            try:
                detail = json.loads(record["message"]).get("detail", {})
            except (ValueError, AttributeError):
                continue
            pending = detail.get("PendingDeploymentSummary") or {}
            if pending.get("EndpointConfigName") != config_name:
                continue
            for variant in pending.get("ProductionVariants", []):
                for status in variant.get("VariantStatus", []):
                    stage = Stage(str(status.get("Status", "")), str(status.get("StatusMessage", "")))
                    if stage not in stages:
                        stages.append(stage)
    return stages


def _expected(settings: DeployedSettings) -> tuple[str, int | None]:
    config = settings.api_deployment_config or {}
    if ROLLING_POLICY in config:
        return "ROLLING", config[ROLLING_POLICY].get("WaitIntervalInSeconds")
    routing = config.get(ROUTING_POLICY, {}).get("TrafficRoutingConfiguration", {})
    return settings.strategy, routing.get("WaitIntervalInSeconds")


def check_strategy(settings: DeployedSettings, live: LiveEndpoint, logs: Any) -> Check:
    strategy, bake_s = _expected(settings)
    expected = strategy if bake_s is None else f"{strategy} with {bake_s} s bakes"
    config_name = live.endpoint.get("EndpointConfigName", "")
    created, configured = live.endpoint.get("CreationTime"), live.config.get("CreationTime")
    if created is not None and configured is not None and _millis(configured) <= _millis(created):
        return passed(
            STRATEGY,
            "last-update",
            expected=expected,
            seen=f"the endpoint was created with {config_name}: no update to check yet",
        )
    if strategy == "ALL_AT_ONCE":
        return passed(STRATEGY, "last-update", expected=expected, seen="updated all at once, as configured")
    stages = deployment_stages(logs, settings.deployment_event_log_group, config_name, configured or created)
    if not stages:
        return failed(
            STRATEGY,
            "last-update",
            expected=expected,
            seen=f"no deployment event of the update to {config_name} in "
            f"{settings.deployment_event_log_group}",
            fix="the stack records deployment events from its own deployment on: an update made before "
            "cannot be checked; after the next `make deploy` run the acceptance again "
            "(docs/acceptance.md#strategy)",
        )
    shown = "; ".join(f"{s.status}: {s.message}" for s in stages)
    steps = [s for s in stages if s.status == ACTIVATING and s.partial]
    bakes = [
        int(m["seconds"]) for s in stages if s.status == BAKING and (m := BAKE_SECONDS.search(s.message))
    ]
    enough = 1 if strategy == "CANARY" else 2
    canary_seen = strategy != "CANARY" or any("canary" in s.message.lower() for s in stages)
    if len(steps) < enough or not canary_seen:
        return failed(
            STRATEGY,
            "last-update",
            expected=expected,
            seen=f"{FELL_BACK}: {len(steps)} partial traffic step(s) in the events ({shown})",
            fix=FELL_BACK_FIX,
        )
    if bake_s is not None and bakes and bakes[0] != bake_s:
        return failed(
            STRATEGY,
            "last-update",
            expected=expected,
            seen=f"the first step baked {bakes[0]} s ({shown})",
            fix="the endpoint's DeploymentConfig is not the stack's: see template/deployment-config",
        )
    return passed(
        STRATEGY,
        "last-update",
        expected=expected,
        seen=f"{strategy}: {len(steps)} partial traffic step(s), bakes {bakes or 'not reported'} s ({shown})",
        steps=len(steps),
    )

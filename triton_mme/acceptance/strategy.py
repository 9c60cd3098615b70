"""Check 3, the last update followed its strategy: the endpoint's deployment events, as the stack keeps them.

DescribeEndpoint says which DeploymentConfig the last update asked for (LastDeploymentConfig, compared in
check 2) but not what SageMaker did: an endpoint its guardrails exclude is updated all at once without an
error. The stack's DeploymentEvents rule keeps every "SageMaker Endpoint Deployment State Change" event of
the endpoint in a log group (triton_mme_cdk/constructs/endpoint/deployment_events.py); each carries the
pending deployment's variant status.

What the events can tell, and what they cannot. AWS shows their messages only in examples, for a canary
update ("Activating traffic on canary capacity of 1 instance(s).", "Baking for 600 seconds
(TerminationWaitInSeconds) with traffic enabled on full capacity of 2 instance(s).", SageMaker developer
guide, "Events that Amazon SageMaker AI sends to Amazon EventBridge"), none for linear or rolling steps, and
warns that the examples "may not work for all endpoints". So the check reads as little wording as it can:

- two or more distinct traffic stages (`ActivatingTraffic`) are a stepped shift: the strategy ran;
- a single traffic stage on "full capacity" (the examples' wording for the whole new fleet) is an update
  all at once: the guardrails excluded the endpoint;
- anything else is "cannot tell", never a pass and never a failure: no event (EventBridge delivers
  asynchronously, may fail to, and the group's retention expires events), no traffic stage yet, a single
  stage in wording the examples do not show, or an update made before the stack's record existed (its log
  group's creation time), which nothing recorded and no fix can reach.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from triton_mme.acceptance.live import LiveEndpoint
from triton_mme.acceptance.report import STRATEGY, Check, cannot_tell, failed, passed
from triton_mme.acceptance.stack import ROLLING_POLICY, ROUTING_POLICY, DeployedSettings
from triton_mme.core.bounded import load_json
from triton_mme.core.limits import MAX_REPLY_BYTES

ACTIVATING, BAKING = "ActivatingTraffic", "Baking"
BAKE_SECONDS = re.compile(r"Baking for (?P<seconds>\d+) seconds")
FULL_CAPACITY = "full capacity"
FELL_BACK = "SageMaker updated all at once"
FELL_BACK_FIX = (
    "SageMaker's deployment guardrails excluded this endpoint and updated it without the configured steps "
    "or rollback alarms; see docs/acceptance.md#strategy (choose strategy=all-at-once to say so, or remove "
    "what excludes the endpoint)"
)
NO_EVENT_WHY = (
    "EventBridge delivers the events asynchronously: run the acceptance again in a few minutes; if they "
    "never come, the rule's FailedInvocations metric (AWS/Events) says whether delivery fails, and the "
    "group's retention may have expired them (docs/acceptance.md#strategy)"
)


@dataclass(frozen=True)
class Stage:
    status: str
    message: str
    # When SageMaker reports it: two steps with the same message (rolling batches) are two stages.
    started: str = ""

    @property
    def on_full_capacity(self) -> bool:
        return FULL_CAPACITY in self.message.lower()


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
                detail = load_json(record["message"], where=log_group, max_bytes=MAX_REPLY_BYTES).get(
                    "detail", {}
                )
            except (ValueError, AttributeError):
                continue
            pending = detail.get("PendingDeploymentSummary") or {}
            if pending.get("EndpointConfigName") != config_name:
                continue
            for variant in pending.get("ProductionVariants", []):
                for status in variant.get("VariantStatus", []):
                    stage = Stage(
                        str(status.get("Status", "")),
                        str(status.get("StatusMessage", "")),
                        str(status.get("StartTime", "")),
                    )
                    if stage not in stages:
                        stages.append(stage)
    return stages


def record_created(logs: Any, log_group: str) -> int | None:
    """When the stack's deployment-event log group was created (epoch milliseconds), None if it is missing."""
    for group in logs.describe_log_groups(logGroupNamePrefix=log_group).get("logGroups", []):
        if group.get("logGroupName") == log_group and "creationTime" in group:
            return int(group["creationTime"])
    return None


def _when(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


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
    log_group = settings.deployment_event_log_group
    since = configured or created
    recorded_from = record_created(logs, log_group)
    if recorded_from is None:
        return cannot_tell(
            STRATEGY,
            "last-update",
            expected=expected,
            seen=f"no log group {log_group}: the stack's deployment-event record is missing",
            why="nothing recorded how SageMaker applied the update; `make deploy` puts the record back and "
            "the next update is recorded",
        )
    if since is not None and _millis(since) < recorded_from:
        return cannot_tell(
            STRATEGY,
            "last-update",
            expected=expected,
            seen=f"the update to {config_name} ({_when(_millis(since))}) was made before the stack's "
            f"deployment-event record existed ({_when(recorded_from)})",
            why="nothing recorded how SageMaker applied it; the next update is recorded",
        )
    stages = deployment_stages(logs, log_group, config_name, since)
    if not stages:
        return cannot_tell(
            STRATEGY,
            "last-update",
            expected=expected,
            seen=f"no deployment event of the update to {config_name} in {log_group}",
            why=NO_EVENT_WHY,
        )
    shown = "; ".join(f"{s.status}: {s.message}" for s in stages)
    steps = [s for s in stages if s.status == ACTIVATING]
    bakes = [
        int(m["seconds"]) for s in stages if s.status == BAKING and (m := BAKE_SECONDS.search(s.message))
    ]
    if len(steps) == 1 and steps[0].on_full_capacity:
        return failed(
            STRATEGY,
            "last-update",
            expected=expected,
            seen=f"{FELL_BACK}: one traffic step, on the full capacity ({shown})",
            fix=FELL_BACK_FIX,
        )
    if len(steps) < 2:
        what = "one traffic step, in wording AWS shows no example of" if steps else "no traffic step"
        return cannot_tell(
            STRATEGY,
            "last-update",
            expected=expected,
            seen=f"{what} in the events of the update to {config_name} ({shown})",
            why="the update may still be running or its events be incomplete: run the acceptance again once "
            "the endpoint is InService (docs/acceptance.md#strategy)",
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
        seen=f"{strategy}: {len(steps)} traffic steps, bakes {bakes or 'not reported'} s ({shown})",
        steps=len(steps),
    )

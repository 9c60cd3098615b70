"""Runs every acceptance check against one deployed stack, in the order their inputs arrive.

The serving check goes first: its invocations are what the request metrics are then waited for. Every call
reads, except InvokeEndpoint. An AWS error inside a check group fails that group in one line naming the
refused call; the other groups still run.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from triton_mme.acceptance.build import check_build
from triton_mme.acceptance.build_engine import build_engine_verdicts
from triton_mme.acceptance.live import LiveEndpoint, describe_live
from triton_mme.acceptance.metrics import check_alarms, check_metrics_arrive, check_scaling
from triton_mme.acceptance.report import (
    FIRST_DEPLOY,
    MANIFEST,
    METRICS,
    SERVING,
    STRATEGY,
    TEMPLATE,
    AcceptanceReport,
    Check,
    failed,
)
from triton_mme.acceptance.serving import check_isolation, check_serving
from triton_mme.acceptance.stack import StackFacts
from triton_mme.acceptance.strategy import check_strategy
from triton_mme.acceptance.template import check_template
from triton_mme.acceptance.timing import DEFAULT_SERVING_SAMPLE, SYSTEM_TIMING, Timing
from triton_mme.acceptance.verdicts import (
    check_ami_honoured,
    check_component_endpoint_update,
    check_component_metrics,
    check_components_run,
    check_no_capacity_error,
)
from triton_mme.client.manifest_source import ManifestSource
from triton_mme.core.errors import UserError, describe_aws_error, first_line


@dataclass(frozen=True)
class AcceptanceClients:
    cloudformation: Any
    sagemaker: Any
    runtime: Any
    s3: Any
    cloudwatch: Any
    autoscaling: Any
    logs: Any
    stepfunctions: Any

    @classmethod
    def from_session(cls, session: Any) -> AcceptanceClients:
        from triton_mme.client.transport import ONE_ATTEMPT

        return cls(
            cloudformation=session.client("cloudformation"),
            sagemaker=session.client("sagemaker"),
            runtime=session.client("sagemaker-runtime", config=ONE_ATTEMPT),
            s3=session.client("s3"),
            cloudwatch=session.client("cloudwatch"),
            autoscaling=session.client("application-autoscaling"),
            logs=session.client("logs"),
            stepfunctions=session.client("stepfunctions"),
        )


def _guarded(group: str, run: Callable[[], list[Check]]) -> list[Check]:
    """The group's checks, or one failed check naming the AWS call or the file that stopped it."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    try:
        return run()
    except ClientError as error:
        return [
            failed(
                group,
                "aws",
                expected=f"{error.operation_name} answers",
                seen=describe_aws_error(error),
                fix=f"let the credentials running the acceptance call {error.operation_name} "
                "(docs/acceptance.md lists the permissions)",
            )
        ]
    except NoCredentialsError:
        raise
    except (BotoCoreError, UserError) as error:
        return [
            failed(
                group,
                "read",
                expected="its inputs can be read",
                seen=describe_aws_error(error),
                fix="see the message",
            )
        ]


def run_acceptance(
    stack_name: str,
    clients: AcceptanceClients,
    *,
    region: str | None = None,
    timing: Timing = SYSTEM_TIMING,
    metrics_wait_s: float,
    progress: Callable[[Check], None] | None = None,
    serving_sample: int = DEFAULT_SERVING_SAMPLE,
) -> AcceptanceReport:
    facts = StackFacts.read(clients.cloudformation, stack_name)
    settings = facts.settings
    started = timing.wall()
    checks: list[Check] = []

    def emit(check: Check) -> None:
        checks.append(check)
        if progress:
            progress(check)

    def record(group: str, run: Callable[[], list[Check]]) -> None:
        for check in _guarded(group, run):
            emit(check)

    source = ManifestSource(settings.live_manifest_url, clients.s3)
    try:
        manifest = source.manifest()
        report = source.serving_report(manifest)
    except UserError as error:
        for group in (SERVING, MANIFEST):
            emit(_unreadable(group, settings.live_manifest_url, first_line(error)))
        manifest = None
    components = settings.inference_components
    if manifest is not None:
        record(
            SERVING,
            lambda: check_serving(
                facts.endpoint_name,
                manifest,
                source,
                report,
                clients.runtime,
                timing,
                sample=serving_sample,
                component_endpoint=components.endpoint_name if components else None,
            ),
        )
        record(
            SERVING,
            lambda: [check_isolation(facts.endpoint_name, manifest, source, report, clients.runtime, timing)],
        )
    described: list[LiveEndpoint] = []

    def template() -> list[Check]:
        described.append(describe_live(clients.sagemaker, facts.endpoint_name, settings.variant_name))
        return check_template(settings, described[0])

    record(TEMPLATE, template)
    if described:
        record(STRATEGY, lambda: [check_strategy(settings, described[0], clients.logs)])
    if manifest is not None:
        record(MANIFEST, lambda: check_build(settings, manifest, source, report, clients.s3))
    if (machine := settings.build_state_machine_arn) is not None:
        record(FIRST_DEPLOY, lambda: build_engine_verdicts(clients.stepfunctions, machine))
    record(
        METRICS, lambda: check_metrics_arrive(settings, clients.cloudwatch, timing, started, metrics_wait_s)
    )
    record(METRICS, lambda: check_alarms(settings, clients.cloudwatch))
    record(METRICS, lambda: check_scaling(settings, clients.autoscaling))
    record(
        FIRST_DEPLOY,
        lambda: [check_ami_honoured(clients.logs, facts.endpoint_name, settings.inference_ami_version)],
    )
    if components is not None:
        deployed = components
        record(FIRST_DEPLOY, lambda: check_components_run(clients.sagemaker, deployed))
        record(FIRST_DEPLOY, lambda: [check_component_metrics(clients.cloudwatch, deployed)])
        record(FIRST_DEPLOY, lambda: [check_component_endpoint_update(clients.sagemaker, deployed)])
        record(FIRST_DEPLOY, lambda: [check_no_capacity_error(clients.sagemaker, clients.runtime, deployed)])
    return AcceptanceReport(
        stack=stack_name,
        endpoint=facts.endpoint_name,
        region=region,
        started=started.astimezone(dt.UTC).isoformat(timespec="seconds"),
        checks=tuple(checks),
    )


def _unreadable(group: str, location: str, problem: str) -> Check:
    return failed(
        group,
        "live-manifest",
        expected=f"the live manifest {location}",
        seen=problem,
        fix="the deployment publishes it after the endpoint update (`make deploy`; "
        "docs/acceptance.md#manifest)",
    )

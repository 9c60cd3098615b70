from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import CfnWaitCondition, CfnWaitConditionHandle, CustomResource, Duration
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct, IDependable

from triton_mme.core.platform import CUSTOM_RESOURCE_TIMEOUT_MINUTES, WAIT_CONDITION_TIMEOUT_MINUTES
from triton_mme_cdk.constructs.build_follower import BuildFollower
from triton_mme_cdk.constructs.waiting_provider import waiting_provider

HANDLER_DIR = Path(__file__).parent / "model_build_trigger_handler"
# CloudFormation waits at most one hour for a custom resource (the platform table's
# CUSTOM_RESOURCE_TIMEOUT_MINUTES): every stage, its queueing and the polling must all fit in it.
CUSTOM_RESOURCE_LIMIT = Duration.minutes(CUSTOM_RESOURCE_TIMEOUT_MINUTES)
POLL_INTERVAL = Duration.minutes(1)
# The wait condition's and its handle's logical IDs carry this much of the fingerprint: a new one per build.
FINGERPRINT_ID_LENGTH = 16
# is-complete stops a build still running this long after the first stage started: two polls before the
# limit, so the resource fails with the build's own message instead of the framework's "Operation timed out".
STOP_AFTER = Duration.seconds(CUSTOM_RESOURCE_LIMIT.to_seconds() - 2 * POLL_INTERVAL.to_seconds())


@dataclass(frozen=True)
class BuildStage:
    """One CodeBuild project the trigger runs, in order, and the log group its failure line is read from."""

    name: str
    project: codebuild.IProject
    log_group: logs.ILogGroup
    batch: bool = False
    """The stage runs as a CodeBuild batch build (its buildspec's shards)."""


class ModelBuildTrigger(Construct):
    """Runs `stages` one after the other during `cdk deploy` whenever `fingerprint` changes.

    Resources that must wait for the models (the endpoint, the manifest promotion) depend on `self.done`;
    a failed stage fails the deployment, with the stage's own error line, before they are touched. The running
    build is stopped when the deployment stops waiting for it, is deleted, or moves to another fingerprint
    (model_build_trigger_handler).

    `wait_minutes` (default: None, the stages end within the custom resource's hour) longer than the hour
    allows, up to a wait condition's 12 hours: the custom resource only starts the run, a BuildFollower
    follows it, and `self.done` is a wait condition (with its own handle) per fingerprint, signalled when the
    stages end; `self.follower` is None otherwise.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stages: Sequence[BuildStage],
        fingerprint: str,
        log_retention: logs.RetentionDays,
        wait_minutes: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if not stages:
            raise ValueError("a model build trigger needs at least one stage")
        projects = [stage.project.project_arn for stage in stages]
        batches = any(stage.batch for stage in stages)
        # The batch actions are scoped to the two projects, as the build actions are; that CodeBuild
        # authorizes StartBuildBatch, BatchGetBuildBatches, StopBuildBatch and ListBuildBatchesForProject on
        # the project resource is not confirmed here (the Service Authorization Reference was not
        # reachable). Were one refused, the deployment fails at once with the refused call's AccessDenied.
        # A batch's tasks are builds: reading a failed shard's build needs BatchGetBuilds either way.
        reads = iam.PolicyStatement(
            actions=["codebuild:BatchGetBuilds", "codebuild:ListBuildsForProject"]
            + (["codebuild:BatchGetBuildBatches", "codebuild:ListBuildBatchesForProject"] if batches else []),
            resources=projects,
        )

        def starts(chosen: Sequence[BuildStage]) -> iam.PolicyStatement:
            actions = sorted(
                {"codebuild:StartBuildBatch" if s.batch else "codebuild:StartBuild" for s in chosen}
            )
            return iam.PolicyStatement(actions=actions, resources=[s.project.project_arn for s in chosen])

        # on-event starts the first stage, is-complete each later one when the stage before it succeeded.
        starts_first = starts(stages[:1])
        # StopBuild has no build-level resource: the handlers stop only a build they identified by its id.
        stops = iam.PolicyStatement(
            actions=["codebuild:StopBuild"] + (["codebuild:StopBuildBatch"] if batches else []),
            resources=projects,
        )
        is_complete = [reads, stops]
        if len(projects) > 1:
            is_complete.append(starts(stages[1:]))
        # A failed stage's first `error: ` line, from its own log group.
        is_complete.append(
            iam.PolicyStatement(
                actions=["logs:FilterLogEvents"],
                resources=[stage.log_group.log_group_arn for stage in stages],
            )
        )
        stop_after = STOP_AFTER
        if wait_minutes is not None:
            if not CUSTOM_RESOURCE_TIMEOUT_MINUTES < wait_minutes <= WAIT_CONDITION_TIMEOUT_MINUTES:
                raise ValueError(
                    f"wait_minutes={wait_minutes}: allowed {CUSTOM_RESOURCE_TIMEOUT_MINUTES + 1}.."
                    f"{WAIT_CONDITION_TIMEOUT_MINUTES}, or None for a build that ends within the hour"
                )
            stop_after = Duration.seconds(wait_minutes * 60 - 2 * POLL_INTERVAL.to_seconds())
        handlers = waiting_provider(
            self,
            handler_dir=HANDLER_DIR,
            on_event_statements=[reads, starts_first, stops],
            is_complete_statements=is_complete,
            query_interval=POLL_INTERVAL,
            total_timeout=CUSTOM_RESOURCE_LIMIT,
            log_retention=log_retention,
            handler_calls="CodeBuild for the stages' builds, CloudWatch Logs for a failed stage's error line",
        )
        self.provider = handlers.provider
        properties = {
            "Stages": [
                {"Name": stage.name, "Project": stage.project.project_name}
                | ({"Batch": "true"} if stage.batch else {})
                for stage in stages
            ],
            "Fingerprint": fingerprint,
            "StopAfterSeconds": str(int(stop_after.to_seconds())),
        }
        self.follower: BuildFollower | None = None
        handle: CfnWaitConditionHandle | None = None
        if wait_minutes is not None:
            self.follower = BuildFollower(
                self,
                "Follower",
                is_complete=handlers.is_complete,
                handler_dir=HANDLER_DIR,
                poll_interval=POLL_INTERVAL,
                timeout=Duration.minutes(wait_minutes),
                log_retention=log_retention,
            )
            self.follower.state_machine.grant_start_execution(handlers.on_event)
            # A wait condition waits once: each fingerprint gets its own, and its own handle (CloudFormation
            # User Guide: a reused handle may carry an earlier update's signals).
            handle = CfnWaitConditionHandle(self, f"BuildDoneHandle{fingerprint[:FINGERPRINT_ID_LENGTH]}")
            properties |= {"SignalUrl": handle.ref, "Follower": self.follower.state_machine.state_machine_arn}
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type="Custom::ModelBuild",
            properties=properties,
            service_timeout=CUSTOM_RESOURCE_LIMIT,
        )
        self.done: IDependable = self.resource
        if handle is not None and wait_minutes is not None:
            condition = CfnWaitCondition(
                self,
                f"BuildDone{fingerprint[:FINGERPRINT_ID_LENGTH]}",
                handle=handle.ref,
                count=1,
                timeout=str(wait_minutes * 60),
            )
            # Its time runs from the run's start; the follower signals once the stages end.
            condition.node.add_dependency(self.resource)
            self.done = condition

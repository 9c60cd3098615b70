"""The deploy's model build engine: one Step Functions state machine per stack (build_state_machine.py), and
per fingerprint its own wait condition, handle and `Custom::ModelBuild` run, whose function starts and stops
that fingerprint's execution (model_build_engine_handler; docs/deploy.md, "The build engine")."""

from __future__ import annotations

import hashlib
from functools import partial
from pathlib import Path

from aws_cdk import CfnWaitCondition, CfnWaitConditionHandle, CustomResource, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from triton_mme_cdk.constructs.build.build_state_machine import BuildStage, build_state_machine
from triton_mme_cdk.constructs.functions.handler_function import handler_function, on_event_provider
from triton_mme_cdk.constructs.scanners.nag import acknowledge_wildcard_resources
from triton_mme_cdk.settings import BUILD_DEADLINE_MARGIN_MINUTES

HANDLER_DIR = Path(__file__).parent / "model_build_engine_handler"
KEY_LENGTH = 16


class ModelBuildEngine(Construct):
    """Runs `build`, then `check`, once per `fingerprint`; `self.done` is that fingerprint's wait condition,
    which the state machine signals SUCCESS once the check published `build_manifest_key` in `bucket` (at once
    when it is there already), or FAILURE with the failed stage's first `error:` line. Its timeout is both
    budgets (held to the wait condition's 12 hours by BuildRunnerSettings) plus BUILD_DEADLINE_MARGIN_MINUTES,
    which holds both stages' start retries and backstops."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        build: BuildStage,
        check: BuildStage,
        fingerprint: str,
        bucket: s3.IBucket,
        build_manifest_key: str,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        self.wait_minutes = build.minutes + check.minutes + BUILD_DEADLINE_MARGIN_MINUTES
        stack = Stack.of(self)
        function = partial(handler_function, self, handler_dir=HANDLER_DIR, log_retention=log_retention)
        signal = function("Signal", entry="signal", environment={"STACK_ID": stack.stack_id})
        # The handle's URL is its physical id; a failed build's first `error:` line is in its own log.
        signal.add_to_role_policy(_allow("cloudformation:DescribeStackResource", stack.stack_id))
        for stage in (build, check):
            signal.add_to_role_policy(_allow("codebuild:BatchGetBuilds", stage.project.project_arn))
            stage.log_group.grant(signal, "logs:FilterLogEvents")
        builds = bucket.arn_for_objects(build_manifest_key.rsplit("/", 2)[0] + "/*")
        self.state_machine = machine = build_state_machine(
            self,
            build,
            check,
            bucket=bucket.bucket_name,
            builds=builds,
            signal=signal,
            log_retention=log_retention,
        )
        # The runs' on-event function (no is-complete): starts, or stops, one execution of this machine.
        trigger = function("Trigger", entry="on_event")
        machine.grant_start_execution(trigger)
        stop = machine.grant_execution(trigger, "states:StopExecution").principal_statements[0].resources
        acknowledge_wildcard_resources(self, stop, reason="The trigger stops only this machine's executions.")
        calls = "Step Functions to start or stop an execution"
        provider = on_event_provider(self, trigger, log_retention=log_retention, calls=calls)
        # A wait condition's properties cannot be updated ("Updates aren't supported", CloudFormation User
        # Guide): another fingerprint or budget is another logical id, with its own handle, run and wait.
        key = hashlib.sha256(f"{fingerprint}:{self.wait_minutes}".encode()).hexdigest()[:KEY_LENGTH]
        handle = CfnWaitConditionHandle(self, f"Handle{key}")
        self.resource = CustomResource(
            self,
            f"Run{key}",
            service_token=provider.service_token,
            resource_type="Custom::ModelBuild",
            properties={
                "StateMachine": machine.state_machine_arn,
                "Fingerprint": fingerprint,
                # The handle's logical id, never its URL: the signal reads the URL from CloudFormation.
                "Handle": stack.resolve(handle.logical_id),
                "BuildManifestKey": build_manifest_key,
            },
        )
        self.resource.node.add_dependency(handle)
        self.done = CfnWaitCondition(
            self, f"Done{key}", handle=handle.ref, count=1, timeout=str(self.wait_minutes * 60)
        )
        self.done.node.add_dependency(self.resource)


def _allow(action: str, *resources: str) -> iam.PolicyStatement:
    return iam.PolicyStatement(actions=[action], resources=list(resources))

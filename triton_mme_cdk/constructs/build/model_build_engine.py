"""The deploy's model build engine: one Step Functions state machine per stack runs the build stage, then the
serving check (which publishes the build's manifest), then signals the fingerprint's wait condition, with Step
Functions' optimised CodeBuild integrations ("The Run a Job (.sync) integration pattern is supported" for
StartBuild and StartBuildBatch: Step Functions Developer Guide, connect-codebuild).

Each fingerprint (with its budget) has its own wait condition, handle and `Custom::ModelBuild` run, under
logical ids of their own: the run's Create starts one execution and its Delete stops it; nothing of another
fingerprint is ever updated or signalled (docs/deploy.md, "The build engine").
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from aws_cdk import ArnFormat, CfnWaitCondition, CfnWaitConditionHandle, CustomResource, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.constructs.build.build_state_machine import BuildStage, build_state_machine
from triton_mme_cdk.constructs.functions.handler_function import (
    handler_function,
    on_event_provider,
)
from triton_mme_cdk.constructs.scanners.nag import acknowledge_wildcard_resources
from triton_mme_cdk.settings import BUILD_DEADLINE_MARGIN_MINUTES

HANDLER_DIR = Path(__file__).parent / "model_build_engine_handler"
KEY_LENGTH = 16


class ModelBuildEngine(Construct):
    """Runs `build`, then `check`, once per `fingerprint`; `self.done` is that fingerprint's wait condition.

    The state machine (`self.state_machine`) signals it SUCCESS once the check published
    `build_manifest_key` in `bucket` (at once when it is there already: a return to a fingerprint built
    before), or FAILURE with the failed stage's first `error:` line. Its timeout (`self.wait_minutes`) is both
    budgets plus BUILD_DEADLINE_MARGIN_MINUTES, which holds both stages' start retries and backstops.
    """

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
        if self.wait_minutes > (most := PLATFORM.limits.wait_condition_timeout_minutes.value):
            raise ValueError(
                f"build stages of {build.minutes} and {check.minutes} minutes: allowed together at most "
                f"{most - BUILD_DEADLINE_MARGIN_MINUTES} (a wait condition's limit)"
            )
        stack, self._retention = Stack.of(self), log_retention
        step = self._function(
            "Signal",
            "step",
            {"STACK_ID": stack.stack_id},
            # The handle's URL is its physical id; a failed build's line is in its own log.
            (["cloudformation:DescribeStackResource"], [stack.stack_id]),
            (["codebuild:BatchGetBuilds"], [build.project.project_arn, check.project.project_arn]),
            (["logs:FilterLogEvents"], [build.log_group.log_group_arn, check.log_group.log_group_arn]),
        )
        builds = bucket.arn_for_objects(build_manifest_key.rsplit("/", 2)[0] + "/*")
        self.state_machine = build_state_machine(
            self,
            build,
            check,
            bucket=bucket.bucket_name,
            builds=builds,
            step=step,
            log_retention=log_retention,
        )
        # A wait condition's properties cannot be updated ("Updates aren't supported", CloudFormation User
        # Guide): another fingerprint or budget is another logical id, with its own handle, run and wait.
        key = hashlib.sha256(f"{fingerprint}:{self.wait_minutes}".encode()).hexdigest()[:KEY_LENGTH]
        handle = CfnWaitConditionHandle(self, f"Handle{key}")
        self.resource = CustomResource(
            self,
            f"Run{key}",
            service_token=self._trigger(),
            resource_type="Custom::ModelBuild",
            properties={
                "StateMachine": self.state_machine.state_machine_arn,
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

    def _function(
        self, name: str, entry: str, environment: dict[str, str], *grants: tuple[list[str], list[str]]
    ) -> lambda_.Function:
        function = handler_function(
            self, name, handler_dir=HANDLER_DIR, entry=entry, log_retention=self._retention,
            environment=environment,
        )  # fmt: skip
        for actions, resources in grants:
            function.add_to_role_policy(iam.PolicyStatement(actions=actions, resources=resources))
        return function

    def _trigger(self) -> str:
        """The service token of the stack's runs' on-event function (no is-complete): start, or stop, one
        execution."""
        machine = self.state_machine
        executions = Stack.of(self).format_arn(
            service="states",
            resource="execution",
            resource_name=f"{machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        on_event = self._function(
            "Trigger",
            "on_event",
            {},
            (["states:StartExecution"], [machine.state_machine_arn]),
            (["states:StopExecution"], [executions]),
        )
        acknowledge_wildcard_resources(
            self, [executions], reason="The trigger stops only this machine's executions."
        )
        calls = "Step Functions to start or stop an execution"
        return on_event_provider(self, on_event, log_retention=self._retention, calls=calls).service_token

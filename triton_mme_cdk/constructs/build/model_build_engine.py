"""The deploy's model build engine: one Step Functions state machine per stack (build_state_machine.py), and
for each fingerprint (with its budget) its own wait condition, handle and `Custom::ModelBuild` run, under
logical ids of their own: the run starts and stops that fingerprint's execution (model_build_engine_handler);
nothing of another fingerprint is ever updated or signalled (docs/deploy.md, "The build engine").
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from aws_cdk import CfnWaitCondition, CfnWaitConditionHandle, CustomResource, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.constructs.build.build_state_machine import BuildStage, build_state_machine
from triton_mme_cdk.constructs.functions.handler_function import handler_function, on_event_provider
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
        stack = Stack.of(self)
        signal = self._function("Signal", "signal", log_retention, {"STACK_ID": stack.stack_id})
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
        trigger = self._function("Trigger", "on_event", log_retention)
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

    def _function(
        self, name: str, entry: str, retention: logs.RetentionDays, environment: dict[str, str] | None = None
    ) -> lambda_.Function:
        return handler_function(
            self, name, handler_dir=HANDLER_DIR, entry=entry, log_retention=retention, environment=environment
        )


def _allow(action: str, *resources: str) -> iam.PolicyStatement:
    return iam.PolicyStatement(actions=[action], resources=list(resources))

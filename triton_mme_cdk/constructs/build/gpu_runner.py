"""One GPU CodeBuild runner: the construct both build stages (the model build and the serving check) are."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from triton_mme_cdk.constructs.build.runner_source import runner_source
from triton_mme_cdk.constructs.scanners.checkov import LOG_GROUP_KEY_REASON, skip_checks
from triton_mme_cdk.constructs.scanners.nag import (
    acknowledge_codebuild_grants,
    acknowledge_wildcard_resources,
)
from triton_mme_cdk.settings import BuildRunnerSettings

COMPUTE_TYPES = {"SMALL": codebuild.ComputeType.SMALL, "LARGE": codebuild.ComputeType.LARGE}


@dataclass(frozen=True, kw_only=True)
class GpuRunnerProps:
    """The props of a GpuRunner."""

    description: str
    """The CodeBuild project's description. @default - required"""

    build_image: codebuild.IBuildImage
    """The GPU image the commands run in. @default - required"""

    runner: BuildRunnerSettings
    """The GPU size (SMALL or LARGE), how long a build may wait for a runner and how long its logs are kept:
    the settings' build runner group. @default - required"""

    files: Mapping[str, Path | bytes]
    """What the runner ships: asset path -> file or package folder (triton_mme_cdk.runner_files), or the bytes
    of a file written at synthesis. @default - required"""

    build_spec: Mapping[str, Any]
    """The buildspec, as an object. @default - required"""

    environment: Mapping[str, str]
    """Plain-text environment variables of every build. @default - required"""

    timeout_minutes: int
    """How long one build may run, in minutes (the stage's own timeout of the runner group). @default -
    required"""

    encryption_key: kms.IKey | None = None
    """The key of the project's artifacts and logs. @default - the AWS managed key for S3"""

    batch_tasks: int = 1
    """Above 1, builds run as CodeBuild batch builds of the buildspec's `batch` section, at most this many
    tasks each, up to `runner.runners` of them at once. @default - 1: one build at a time, no batch"""

    batch_timeout_minutes: int | None = None
    """How long a whole batch may take from submission: every level's queueing and timeout
    (`BuildBatchConfig.TimeoutInMins` bounds the batch, not one build). @default - timeout_minutes"""


class GpuRunner(Construct):
    """A GPU CodeBuild project running `build_spec` over exactly `files`, one build at a time.

    Children: `source` (the asset), `log_group`, `project`. Whoever uses it grants its role what the stage
    may touch (`project` is IGrantable) and acknowledges the wildcards of those grants (`acknowledge`).
    """

    def __init__(self, scope: Construct, construct_id: str, props: GpuRunnerProps) -> None:
        super().__init__(scope, construct_id)
        runner = props.runner
        if runner.compute_type not in COMPUTE_TYPES:
            raise ValueError(
                f"compute type {runner.compute_type}: not a CodeBuild GPU size; allowed SMALL, LARGE"
            )
        self.props = props
        self.source = runner_source(self, "Source", files=props.files)
        self.log_group = logs.LogGroup(
            self, "Logs", retention=runner.log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        skip_checks(self.log_group, {"CKV_AWS_158": LOG_GROUP_KEY_REASON})
        self.project = codebuild.Project(
            self,
            "Project",
            description=props.description,
            source=codebuild.Source.s3(bucket=self.source.bucket, path=self.source.s3_object_key),
            build_spec=codebuild.BuildSpec.from_object(dict(props.build_spec)),
            environment=codebuild.BuildEnvironment(
                build_image=props.build_image, compute_type=COMPUTE_TYPES[runner.compute_type]
            ),
            environment_variables={
                k: codebuild.BuildEnvironmentVariable(value=v) for k, v in props.environment.items()
            },
            timeout=Duration.minutes(props.timeout_minutes),
            queued_timeout=Duration.minutes(runner.queue_timeout_minutes),
            # A second build would race the first to publish; StartBuild refuses it. A batch's own tasks run
            # side by side, up to the runner group's runners.
            concurrent_build_limit=1 if props.batch_tasks == 1 else runner.runners,
            logging=codebuild.LoggingOptions(
                cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=self.log_group)
            ),
            encryption_key=props.encryption_key,
            grant_report_group_permissions=False,
        )
        if props.batch_tasks > 1:
            self._enable_batches(props.batch_tasks, runner)

    def _enable_batches(self, tasks: int, runner: BuildRunnerSettings) -> None:
        """CodeBuild's batch service role (CDK's) and restrictions: this many tasks, of this GPU size only."""
        self.project.enable_batch_builds()
        cfn = self.project.node.default_child
        assert isinstance(cfn, codebuild.CfnProject)
        cfn.add_property_override(
            "BuildBatchConfig.Restrictions",
            {
                "MaximumBuildsAllowed": tasks,
                # The compute type as CloudFormation names it (the project's Environment.ComputeType).
                "ComputeTypesAllowed": [f"BUILD_GENERAL1_{runner.compute_type}"],
            },
        )
        cfn.add_property_override(
            "BuildBatchConfig.TimeoutInMins", self.props.batch_timeout_minutes or self.props.timeout_minutes
        )

    @property
    def role_policy(self) -> iam.Policy:
        """The role's policy, which holds every grant: whatever starts a build can wait for it."""
        role = self.project.role
        assert role is not None
        policy = role.node.find_child("DefaultPolicy")
        assert isinstance(policy, iam.Policy)
        return policy

    def acknowledge(self, wildcard_resources: list[str], *, reason: str, image_reason: str) -> None:
        """Acknowledge the wildcards of the stage's grants (`reason`), CodeBuild's own grants, and the
        non-managed build image (`image_reason`)."""
        policy = self.role_policy
        acknowledge_wildcard_resources(policy, wildcard_resources, reason=reason)
        # With a key, the project's key is the store's: CodeBuild's grant on it also covers SSE-KMS uploads.
        acknowledge_codebuild_grants(
            policy,
            self.project,
            encrypted=self.props.encryption_key is not None,
            image_reason=image_reason,
        )

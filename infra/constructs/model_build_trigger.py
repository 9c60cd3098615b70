from __future__ import annotations

from pathlib import Path

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.constructs.waiting_provider import waiting_provider

HANDLER_DIR = Path(__file__).parent / "model_build_trigger_handler"
# CloudFormation waits at most one hour for a custom resource (ServiceTimeout 1..3600 s): the build,
# its queueing and the polling must all fit in it.
CUSTOM_RESOURCE_LIMIT = Duration.hours(1)
POLL_INTERVAL = Duration.minutes(1)
# is-complete stops a build still running this long after it started: two polls before the limit, so the
# resource fails with the build's own message instead of the framework's "Operation timed out".
STOP_AFTER = Duration.seconds(CUSTOM_RESOURCE_LIMIT.to_seconds() - 2 * POLL_INTERVAL.to_seconds())


class ModelBuildTrigger(Construct):
    """Runs one build of `project` during `cdk deploy` whenever `fingerprint` changes.

    Resources that must wait for the models (the SageMaker Model) depend on `self.resource`; a
    failed build fails the deployment before they are touched. The build is stopped when the deployment
    stops waiting for it, is deleted, or moves to another fingerprint (model_build_trigger_handler).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        project: codebuild.IProject,
        fingerprint: str,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        reads = iam.PolicyStatement(
            actions=["codebuild:BatchGetBuilds", "codebuild:ListBuildsForProject"],
            resources=[project.project_arn],
        )
        starts = iam.PolicyStatement(actions=["codebuild:StartBuild"], resources=[project.project_arn])
        # StopBuild has no build-level resource: the handlers stop only a build they identified by its id.
        stops = iam.PolicyStatement(actions=["codebuild:StopBuild"], resources=[project.project_arn])
        handlers = waiting_provider(
            self,
            handler_dir=HANDLER_DIR,
            on_event_statements=[reads, starts, stops],
            is_complete_statements=[reads, stops],
            query_interval=POLL_INTERVAL,
            total_timeout=CUSTOM_RESOURCE_LIMIT,
            log_retention=log_retention,
        )
        self.provider = handlers.provider
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type="Custom::ModelBuild",
            properties={
                "ProjectName": project.project_name,
                "Fingerprint": fingerprint,
                "StopAfterSeconds": str(int(STOP_AFTER.to_seconds())),
            },
            service_timeout=CUSTOM_RESOURCE_LIMIT,
        )

from __future__ import annotations

from pathlib import Path

from aws_cdk import Acknowledgment, CfnResource, CustomResource, Duration, RemovalPolicy, Validations
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.constructs.nag import acknowledge_wildcard_resources

HANDLER_DIR = Path(__file__).parent / "model_build_trigger_handler"
# CloudFormation waits at most one hour for a custom resource (ServiceTimeout 1..3600 s): the build,
# its queueing and the polling must all fit in it.
CUSTOM_RESOURCE_LIMIT = Duration.hours(1)
POLL_INTERVAL = Duration.minutes(1)
REDUNDANT_ROLE_DEPENDENCY = ("AWS::Lambda::Function", "AWS::StepFunctions::StateMachine")


class ModelBuildTrigger(Construct):
    """Runs one build of `project` during `cdk deploy` whenever `fingerprint` changes.

    Resources that must wait for the models (the SageMaker Model) depend on `self.resource`; a
    failed build fails the deployment before they are touched.
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
        code = lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"])
        reads = iam.PolicyStatement(
            actions=["codebuild:BatchGetBuilds", "codebuild:ListBuildsForProject"],
            resources=[project.project_arn],
        )
        starts = iam.PolicyStatement(actions=["codebuild:StartBuild"], resources=[project.project_arn])
        handlers = {}
        for name, entry, statements in (
            ("OnEvent", "on_event", [reads, starts]),
            ("IsComplete", "is_complete", [reads]),
        ):
            handlers[name] = lambda_.Function(
                self,
                name,
                runtime=lambda_.Runtime.PYTHON_3_14,
                code=code,
                handler=f"handler.{entry}",
                timeout=Duration.seconds(30),
                initial_policy=statements,
                log_group=logs.LogGroup(
                    self, f"{name}Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
                ),
            )
        self.provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=handlers["OnEvent"],
            is_complete_handler=handlers["IsComplete"],
            query_interval=POLL_INTERVAL,
            total_timeout=CUSTOM_RESOURCE_LIMIT,
            log_group=logs.LogGroup(
                self, "ProviderLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
            ),
            disable_waiter_state_machine_logging=False,
            waiter_state_machine_log_options=cr.LogOptions(
                destination=logs.LogGroup(
                    self, "WaiterLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
                ),
                level=sfn.LogLevel.ALL,
            ),
        )
        self._acknowledge_framework_findings(list(handlers.values()))
        for child in self.node.find_all():
            # CDK makes each function and the waiter depend on its role, which the role ARN already implies.
            if isinstance(child, CfnResource) and child.cfn_resource_type in REDUNDANT_ROLE_DEPENDENCY:
                child.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}})
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type="Custom::ModelBuild",
            properties={"ProjectName": project.project_name, "Fingerprint": fingerprint},
            service_timeout=CUSTOM_RESOURCE_LIMIT,
        )

    def _acknowledge_framework_findings(self, handlers: list[lambda_.Function]) -> None:
        framework = [
            self.provider.node.find_child(f"framework-{name}") for name in ("isComplete", "onTimeout")
        ]
        functions = [*handlers, *(f for f in framework if isinstance(f, lambda_.Function))]
        acknowledge_wildcard_resources(
            self,
            [f"{function.function_arn}:*" for function in functions],
            reason="The provider framework invokes the handlers and its own functions, any version of each.",
        )
        acknowledge_wildcard_resources(
            self,
            ["*"],
            reason="The waiter's log delivery (logs:*LogDelivery, ...) has no resource-level permissions.",
        )
        for finding, reason in (
            (
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSLambdaBasicExecutionRole]",
                "The basic execution policy only lets each function write its own logs.",
            ),
            (
                "AwsSolutions-SF2",
                "The provider framework's waiter does not expose X-Ray tracing; it only polls.",
            ),
        ):
            Validations.of(self).acknowledge(Acknowledgment(id=finding, reason=reason))

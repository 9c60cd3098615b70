from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.constructs.endpoint.endpoint_logs import endpoint_log_group_name
from triton_mme_cdk.constructs.scanners.nag import acknowledge_wildcard_resources
from triton_mme_cdk.constructs.store.model_store import ModelStore


class HostingRole(Construct):
    """The role SageMaker assumes to run the Triton container: read models, pull the image, log.

    Permissions sit in a separate `policy` so the Model can depend on it: a Model created before
    its role's policy exists fails intermittently. The container logs only to the group of the endpoint
    named `endpoint_name` (fixed at synthesis, TritonEndpoint).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        store: ModelStore,
        image_repository_arn: str,
        endpoint_name: str,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
        log_group = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=endpoint_log_group_name(endpoint_name),
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        model_objects = store.model_objects_arn()
        log_streams = f"{log_group}:log-stream:*"
        statements = [
            # The archives SageMaker loads by TargetModel, in this policy (which the Model waits for).
            *store.read_models_statements(),
            iam.PolicyStatement(
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                ],
                resources=[image_repository_arn],
            ),
            # GetAuthorizationToken has no resource-level permissions: AWS requires "*".
            iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"]),
            iam.PolicyStatement(
                actions=[
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:DescribeLogStreams",
                    "logs:PutLogEvents",
                ],
                resources=[log_group, log_streams],
            ),
            # PutMetricData has no resource-level permissions: AWS requires "*", so the namespace
            # condition is what confines it.
            iam.PolicyStatement(
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={
                    "StringEquals": {"cloudwatch:namespace": PLATFORM.limits.metrics.instance_namespace}
                },
            ),
        ]
        if encryption_key is not None:
            statements.append(
                iam.PolicyStatement(actions=["kms:Decrypt"], resources=[encryption_key.key_arn])
            )
        self.policy = iam.Policy(self, "Policy", roles=[self.role], statements=statements)
        acknowledge_wildcard_resources(
            self.policy,
            [model_objects, log_streams, "*"],
            reason="Confined wildcards: objects under the model prefix, the streams of the endpoint's own "
            "log group, and '*' only for ecr:GetAuthorizationToken and the namespace-conditioned "
            "cloudwatch:PutMetricData, which have no resource-level permissions.",
        )

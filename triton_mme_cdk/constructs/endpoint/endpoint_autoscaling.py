from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_applicationautoscaling as autoscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from constructs import Construct

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.settings import ScalingSettings

SERVICE_LINKED_ROLE = (
    "aws-service-role/sagemaker.application-autoscaling.amazonaws.com/"
    "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"
)


def service_linked_role(scope: Construct) -> iam.IRole:
    """Application Auto Scaling's SageMaker role, by name: naming it makes Application Auto Scaling create it
    when missing; otherwise the L2 would add an unused role of its own."""
    arn = Stack.of(scope).format_arn(
        service="iam", region="", resource="role", resource_name=SERVICE_LINKED_ROLE
    )
    return iam.Role.from_role_arn(scope, "ServiceLinkedRole", arn, mutable=False)


class EndpointAutoscaling(Construct):
    """Target tracking on the variant's GPU utilization, optionally also on invocations per instance.

    With two policies the variant scales out when either asks and scales in only when both agree.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        endpoint_name: str,
        variant_name: str,
        scaling: ScalingSettings,
    ) -> None:
        """Scales `variant_name` of `endpoint_name` between `scaling`'s min and max instance counts."""
        super().__init__(scope, construct_id)
        scale_in_cooldown = Duration.seconds(scaling.scale_in_cooldown_seconds)
        scale_out_cooldown = Duration.seconds(scaling.scale_out_cooldown_seconds)
        scaling_role = service_linked_role(self)
        # endpoint_name is the endpoint's GetAtt, so CloudFormation creates this target after the
        # endpoint and deletes it before (a target left behind blocks endpoint deletion).
        self.target = autoscaling.ScalableTarget(
            self,
            "Target",
            service_namespace=autoscaling.ServiceNamespace.SAGEMAKER,
            resource_id=f"endpoint/{endpoint_name}/variant/{variant_name}",
            scalable_dimension="sagemaker:variant:DesiredInstanceCount",
            min_capacity=scaling.min_instance_count,
            max_capacity=scaling.max_instance_count,
            role=scaling_role,
        )
        self.gpu_utilization = cloudwatch.Metric(
            namespace=PLATFORM.limits.metrics.instance_namespace,
            metric_name="GPUUtilization",
            dimensions_map={"EndpointName": endpoint_name, "VariantName": variant_name},
            statistic=cloudwatch.Stats.AVERAGE,
            unit=cloudwatch.Unit.PERCENT,
        )
        self.gpu_policy = self.target.scale_to_track_metric(
            "GpuUtilization",
            target_value=scaling.gpu_utilization_target,
            custom_metric=self.gpu_utilization,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
        )
        self.invocations_policy = None
        if scaling.invocations_per_instance_target > 0:
            self.invocations_policy = self.target.scale_to_track_metric(
                "InvocationsPerInstance",
                target_value=scaling.invocations_per_instance_target,
                predefined_metric=autoscaling.PredefinedMetric.SAGEMAKER_VARIANT_INVOCATIONS_PER_INSTANCE,
                scale_in_cooldown=scale_in_cooldown,
                scale_out_cooldown=scale_out_cooldown,
            )

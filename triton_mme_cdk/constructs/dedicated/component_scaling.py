from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_applicationautoscaling as autoscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.constructs.endpoint.endpoint_autoscaling import service_linked_role
from triton_mme_cdk.settings import ScalingSettings


class ComponentScaling(Construct):
    """Target tracking on one inference component's invocations per copy, between `copy_range`; with a minimum
    of 0 also the step policy and its alarm on NoCapacityInvocationFailures that add the first copy back
    (target tracking cannot leave zero copies: platform_data/inference_components.yaml, scale_to_zero).

    `component_name` is the component's fixed name (the caller orders the target after the component).
    Children: `target`, `policy`,
    `wake_policy` and `wake_alarm` (None without scale to zero).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        component_name: str,
        copy_range: tuple[int, int],
        scaling: ScalingSettings,
    ) -> None:
        super().__init__(scope, construct_id)
        low, high = copy_range
        self.target = autoscaling.ScalableTarget(
            self,
            "Target",
            service_namespace=autoscaling.ServiceNamespace.SAGEMAKER,
            resource_id=PLATFORM.components.scaling.resource_id.format(name=component_name),
            scalable_dimension=PLATFORM.components.scaling.scalable_dimension,
            min_capacity=low,
            max_capacity=high,
            role=service_linked_role(self),
        )
        self.policy = self.target.scale_to_track_metric(
            "InvocationsPerCopy",
            target_value=scaling.invocations_per_copy_target,
            predefined_metric=autoscaling.PredefinedMetric.SAGEMAKER_INFERENCE_COMPONENT_INVOCATIONS_PER_COPY,
            scale_in_cooldown=Duration.seconds(scaling.scale_in_cooldown_seconds),
            scale_out_cooldown=Duration.seconds(scaling.scale_out_cooldown_seconds),
        )
        self.wake_policy: autoscaling.StepScalingPolicy | None = None
        self.wake_alarm: cloudwatch.IAlarm | None = None
        if low == 0:
            wake = PLATFORM.components.scale_to_zero
            period = Duration.seconds(wake.wake_period_seconds)
            self.wake_policy = autoscaling.StepScalingPolicy(
                self,
                "WakeFromZero",
                scaling_target=self.target,
                metric=cloudwatch.Metric(
                    namespace=PLATFORM.components.metrics.namespace,
                    metric_name=wake.wake_metric,
                    dimensions_map={PLATFORM.components.metrics.dimension: component_name},
                    statistic=cloudwatch.Stats.SUM,
                    period=period,
                ),
                adjustment_type=autoscaling.AdjustmentType.CHANGE_IN_CAPACITY,
                metric_aggregation_type=autoscaling.MetricAggregationType.MAXIMUM,
                cooldown=period,
                evaluation_periods=1,
                datapoints_to_alarm=1,
                # One failed request or more adds a copy; the L2 needs the interval below it too (no change).
                scaling_steps=[
                    autoscaling.ScalingInterval(upper=1, change=0),
                    autoscaling.ScalingInterval(lower=1, change=1),
                ],
            )
            self.wake_alarm = self.wake_policy.upper_alarm

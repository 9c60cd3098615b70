from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from constructs import Construct

from triton_mme.catalog import DedicatedPlacement
from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.constructs.dedicated.component_scaling import ComponentScaling
from triton_mme_cdk.settings import AlarmThresholds, ScalingSettings, UpdatePolicy
from triton_mme_cdk.settings.placement_rules import CopyFootprint, rolling_batch

# A new component's copies start with the archive's download and Triton's load; ModelDataDownloadTimeout and
# the health check get the multi-model endpoint's model loading limit and more (seconds).
STARTUP_TIMEOUT_SECONDS = 600


Component = sagemaker.CfnInferenceComponent


class DedicatedModel(Construct):
    """One inference component serving one archive in its own Triton container, its compute resource
    requirements from the copy's footprint, scaled by its own `ComponentScaling` between the entry's min and
    max copies (None with autoscaling off).

    `name` is fixed (alarms watch it by name before the component exists); `artifact_url` is a reference to
    the archive (ArchiveLocations). Children: `component` (CfnInferenceComponent), `scaling`, `errors_5xx`
    (after guard_updates).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        endpoint_name: str,
        variant_name: str,
        image_uri: str,
        artifact_url: str,
        environment: Mapping[str, str],
        footprint: CopyFootprint,
        placement: DedicatedPlacement,
        scaling: ScalingSettings,
    ) -> None:
        super().__init__(scope, construct_id)
        self.name = name
        self.model = footprint.model
        self.placement, self.footprint = placement, footprint
        self.errors_5xx: cloudwatch.Alarm | None = None
        self.component = sagemaker.CfnInferenceComponent(
            self,
            "Component",
            inference_component_name=name,
            endpoint_name=endpoint_name,
            variant_name=variant_name,
            specification=Component.InferenceComponentSpecificationProperty(
                container=Component.InferenceComponentContainerSpecificationProperty(
                    image=image_uri, artifact_url=artifact_url, environment=dict(environment)
                ),
                compute_resource_requirements=Component.InferenceComponentComputeResourceRequirementsProperty(
                    number_of_accelerator_devices_required=footprint.accelerators,
                    min_memory_required_in_mb=footprint.min_memory_mb,
                ),
                startup_parameters=Component.InferenceComponentStartupParametersProperty(
                    model_data_download_timeout_in_seconds=STARTUP_TIMEOUT_SECONDS,
                    container_startup_health_check_timeout_in_seconds=STARTUP_TIMEOUT_SECONDS,
                ),
            ),
            runtime_config=Component.InferenceComponentRuntimeConfigProperty(copy_count=placement.copies),
        )
        self.scaling = (
            ComponentScaling(
                self,
                "Scaling",
                component_name=name,
                copy_range=placement.copy_range,
                scaling=scaling,
            )
            if scaling.enabled
            else None
        )
        if self.scaling is not None:
            # The name is fixed, not a reference: the target is registered after the component exists and
            # deregistered before it goes (a target left behind blocks the component's deletion).
            self.scaling.target.node.add_dependency(self.component)

    def metric(self, name: str, statistic: str = cloudwatch.Stats.SUM) -> cloudwatch.Metric:
        """One of the component's metrics, by its fixed name (so alarms may exist before it)."""
        return cloudwatch.Metric(
            namespace=PLATFORM.components.metrics.namespace,
            metric_name=name,
            dimensions_map={PLATFORM.components.metrics.dimension: self.name},
            statistic=statistic,
            period=Duration.minutes(1),
        )

    def guard_updates(
        self, policy: UpdatePolicy, *, thresholds: AlarmThresholds, alarm_topic: sns.ITopic
    ) -> cloudwatch.Alarm:
        """Roll the copies over in batches of `rolling_batch` copies on an update (each step baked for the
        policy's wait, the whole within its timeout; a rollback steps by the same batch) and roll back when
        the component's 5XX alarm fires; returns that alarm, which notifies `alarm_topic`. Where no whole copy
        is 5-50 % of every copy count the component can have, it has no rolling policy and updates all at
        once, SageMaker's own way, with no alarm rollback (docs/placement.md). A new copy loads its one model
        before it serves, so no cold-start metric moves: 5XX is the component's failure signal, as on the
        multi-model endpoint."""
        self.errors_5xx = self.metric("Invocation5XXErrors").create_alarm(
            self,
            "Errors5xx",
            threshold=thresholds.errors_5xx_per_minute,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=thresholds.evaluation_minutes,
            datapoints_to_alarm=thresholds.datapoints_to_alarm,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"The inference component of {self.model} answered with 5XX errors.",
        )
        self.errors_5xx.add_alarm_action(actions.SnsAction(alarm_topic))
        self.errors_5xx.add_ok_action(actions.SnsAction(alarm_topic))
        batch = rolling_batch(self.placement)
        if batch is None:
            return self.errors_5xx
        step = Component.InferenceComponentCapacitySizeProperty(
            type=PLATFORM.components.rolling_update.batch_type, value=batch
        )
        self.component.deployment_config = Component.InferenceComponentDeploymentConfigProperty(
            rolling_update_policy=Component.InferenceComponentRollingUpdatePolicyProperty(
                maximum_batch_size=step,
                rollback_maximum_batch_size=step,
                wait_interval_in_seconds=policy.wait_seconds,
                maximum_execution_timeout_in_seconds=policy.timeout_seconds,
            ),
            auto_rollback_configuration=Component.AutoRollbackConfigurationProperty(
                alarms=[Component.AlarmProperty(alarm_name=self.errors_5xx.alarm_name)]
            ),
        )
        return self.errors_5xx

    def dashboard_widgets(self) -> list[cloudwatch.IWidget]:
        """Invocations and errors, and the model's latency."""
        return [
            cloudwatch.GraphWidget(
                title=f"{self.model}: invocations and errors",
                left=[self.metric(name) for name in ("Invocations", "Invocation4XXErrors")],
                right=[self.metric("Invocation5XXErrors")],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title=f"{self.model}: model latency (µs)",
                left=[self.metric("ModelLatency", cloudwatch.Stats.percentile(p)) for p in (50, 99)],
                width=12,
            ),
        ]

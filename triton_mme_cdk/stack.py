from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from triton_mme.core.catalog import Catalog, Format
from triton_mme_cdk.acceptance_settings import ACCEPTANCE_SETTINGS_OUTPUT, acceptance_settings
from triton_mme_cdk.build_target import PROJECT_ROOT, catalog_in_project
from triton_mme_cdk.constructs.build_runner import ModelBuildRunner
from triton_mme_cdk.constructs.deployment_events import DeploymentEvents
from triton_mme_cdk.constructs.endpoint_autoscaling import EndpointAutoscaling
from triton_mme_cdk.constructs.endpoint_logs import EndpointLogs
from triton_mme_cdk.constructs.manifest_promotion import ManifestPromotion
from triton_mme_cdk.constructs.model_build_trigger import BuildStage, ModelBuildTrigger
from triton_mme_cdk.constructs.model_observability import ModelObservability
from triton_mme_cdk.constructs.model_store import ModelStore, ModelStoreProps
from triton_mme_cdk.constructs.monitoring import EndpointMonitoring
from triton_mme_cdk.constructs.serving_check import ServingCheckRunner
from triton_mme_cdk.constructs.triton_endpoint import CONTAINER_ENVIRONMENT, TritonEndpoint
from triton_mme_cdk.constructs.triton_image import TritonImage
from triton_mme_cdk.settings import Settings

# The output naming the endpoint: clients and the preflight checks find the deployed endpoint through it.
ENDPOINT_NAME_OUTPUT = "EndpointName"


class TritonMmeStack(Stack):
    """A SageMaker GPU multi-model endpoint served by Triton, its model store and its autoscaling."""

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: Settings, catalog: Catalog, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        self.encryption_key = (
            kms.Key.from_key_arn(self, "EncryptionKey", settings.kms_key_arn)
            if settings.kms_key_arn
            else None
        )
        self.store = ModelStore(self, "ModelStore", ModelStoreProps(encryption_key=self.encryption_key))
        self.image = TritonImage(self, "TritonImage", tag=settings.endpoint.triton_image_tag)
        self.endpoint = TritonEndpoint(
            self,
            "Triton",
            name=settings.endpoint_name,
            store=self.store,
            image=self.image,
            instance_type=settings.endpoint.instance_type,
            initial_instance_count=settings.scaling.initial_instance_count,
            encryption_key=self.encryption_key,
            encrypt_volume=settings.endpoint.volume_accepts_kms_key,
            inference_ami_version=settings.endpoint.resolved_inference_ami,
            network_isolation=settings.endpoint.network_isolation,
        )
        self.endpoint_logs = EndpointLogs(
            self,
            "EndpointLogs",
            endpoint_name=self.endpoint.endpoint_name,
            retention=settings.endpoint.log_retention,
        )
        self.build_runner = ModelBuildRunner(
            self,
            "ModelBuild",
            store=self.store,
            project_root=PROJECT_ROOT,
            catalog=catalog_in_project(settings),
            compute_type=settings.build.compute_type,
            triton_image_tag=settings.endpoint.triton_image_tag,
            tensorrt=Format.TENSORRT in catalog.formats,
            timeout=Duration.minutes(settings.build.timeout_minutes),
            queued_timeout=Duration.minutes(settings.build.queue_timeout_minutes),
            log_retention=settings.build.log_retention,
            encryption_key=self.encryption_key,
        )
        # Every archive of the build, loaded and called in the endpoint's own image on a GPU before the
        # build's manifest is published (docs/serving-check.md).
        self.serving_check = ServingCheckRunner(
            self,
            "ServingCheck",
            store=self.store,
            image=self.image,
            project_root=PROJECT_ROOT,
            compute_type=settings.build.compute_type,
            build_fingerprint=self.build_runner.fingerprint,
            container_environment=CONTAINER_ENVIRONMENT,
            timeout=Duration.minutes(settings.build.serving_check_timeout_minutes),
            queued_timeout=Duration.minutes(settings.build.queue_timeout_minutes),
            log_retention=settings.build.log_retention,
            encryption_key=self.encryption_key,
        )
        self.build = ModelBuildTrigger(
            self,
            "ModelBuildTrigger",
            stages=[
                BuildStage("model build", self.build_runner.project, self.build_runner.log_group),
                BuildStage("serving check", self.serving_check.project, self.serving_check.log_group),
            ],
            fingerprint=self.serving_check.fingerprint,
            log_retention=settings.build.log_retention,
        )
        # The build starts as soon as the trigger exists: both stages' grants must exist before it.
        self.build.resource.node.add_dependency(self.build_runner.role_policy, self.serving_check.role_policy)
        # The Model and the endpoint config do not wait: CreateModel and CreateEndpointConfig check the image,
        # the instance type and the inference AMI in the deployment's first minutes. The endpoint waits: it
        # starts serving the prefix, or moves to a new image, only once the build's archives passed the
        # serving check in that image (docs/deploy.md, "What waits for the build").
        self.endpoint.endpoint.node.add_dependency(self.build.resource)
        self.autoscaling = (
            EndpointAutoscaling(
                self,
                "Autoscaling",
                endpoint_name=self.endpoint.endpoint_name,
                variant_name=self.endpoint.variant_name,
                min_capacity=settings.scaling.min_instance_count,
                max_capacity=settings.scaling.max_instance_count,
                gpu_utilization_target=settings.scaling.gpu_utilization_target,
                invocations_per_instance_target=settings.scaling.invocations_per_instance_target,
                scale_in_cooldown=Duration.seconds(settings.scaling.scale_in_cooldown_seconds),
                scale_out_cooldown=Duration.seconds(settings.scaling.scale_out_cooldown_seconds),
            )
            if settings.scaling.enabled
            else None
        )
        self.monitoring = EndpointMonitoring(
            self,
            "Monitoring",
            endpoint_name=self.endpoint.name,
            variant_name=self.endpoint.variant_name,
            thresholds=settings.alarms,
            min_instances=settings.scaling.min_instance_count,
            max_instances=settings.scaling.max_instance_count,
        )
        # Loads, evictions, failed loads per TargetModel from the endpoint's own log (docs/observability.md).
        self.models = ModelObservability(
            self,
            "ModelObservability",
            endpoint_name=self.endpoint.name,
            endpoint_log_group_name=self.endpoint_logs.log_group_name,
            log_group_ready=self.endpoint_logs.retention,
            retention=settings.endpoint.log_retention,
            cache_hit=self.monitoring.metrics.cache_hit_ratio(),
            evictions_per_minute=settings.alarms.thrash_evictions_per_minute,
            alarm_topic=self.monitoring.alarm_topic.topic,
        )
        self.monitoring.dashboard.add_section("Per model", self.models.dashboard_widgets())
        # Updates shift traffic step by step and roll back on the monitoring's alarms, which exist before the
        # endpoint: they watch it by its fixed name (guard_updates).
        self.endpoint.guard_updates(
            settings.updates,
            rollback_alarms=self.monitoring.rollback_alarms,
        )
        # How SageMaker carried out each update, for the acceptance run: recorded from before the endpoint's
        # first update on (the rule matches the endpoint's fixed name).
        self.deployment_events = DeploymentEvents(
            self,
            "DeploymentEvents",
            endpoint_name=self.endpoint.name,
            retention=settings.endpoint.log_retention,
        )
        self.endpoint.endpoint.node.add_dependency(self.deployment_events.policy)
        # The live manifest moves to this build only once the endpoint serves this deployment's config.
        self.promotion = ManifestPromotion(
            self,
            "ManifestPromotion",
            store=self.store,
            fingerprint=self.serving_check.fingerprint,
            endpoint_name=self.endpoint.endpoint_name,
            endpoint_arn=self.endpoint.endpoint.ref,
            endpoint_config_name=self.endpoint.endpoint_config.attr_endpoint_config_name,
            log_retention=settings.build.log_retention,
            encryption_key=self.encryption_key,
        )
        self.promotion.resource.node.add_dependency(self.build.resource)

        CfnOutput(self, ENDPOINT_NAME_OUTPUT, value=self.endpoint.endpoint_name)
        CfnOutput(self, "ModelBucketName", value=self.store.bucket.bucket_name)
        CfnOutput(self, "ModelPrefixUrl", value=self.store.model_prefix_url)
        CfnOutput(
            self, "LiveManifestUrl", value=self.store.bucket.s3_url_for_object(self.store.live_manifest_key)
        )
        CfnOutput(self, "AlarmTopicArn", value=self.monitoring.alarm_topic.topic.topic_arn)
        CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard.dashboard_name)
        CfnOutput(self, "EndpointLogGroup", value=self.endpoint_logs.log_group_name)
        CfnOutput(
            self,
            ACCEPTANCE_SETTINGS_OUTPUT,
            description="What `triton-mme acceptance` checks the live endpoint against (docs/acceptance.md)",
            value=acceptance_settings(
                self,
                endpoint=self.endpoint,
                store=self.store,
                instance_type=settings.endpoint.instance_type,
                initial_instance_count=settings.scaling.initial_instance_count,
                inference_ami_version=settings.endpoint.resolved_inference_ami,
                network_isolation=settings.endpoint.network_isolation,
                image_uri=self.image.image_uri,
                image_tag=self.image.tag,
                build_fingerprint=self.serving_check.fingerprint,
                alarms=list(self.monitoring.alarms.values()),
                autoscaling=self.autoscaling,
                deployment_events=self.deployment_events,
            ),
        )

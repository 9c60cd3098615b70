from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdk_constructs.build_environment import log_retention
from cdk_constructs.build_runner import ModelBuildRunner
from cdk_constructs.endpoint_autoscaling import EndpointAutoscaling
from cdk_constructs.model_build_trigger import ModelBuildTrigger
from cdk_constructs.model_store import ModelStore
from cdk_constructs.monitoring import EndpointMonitoring
from cdk_constructs.triton_endpoint import TritonEndpoint
from cdk_constructs.triton_image import TritonImage
from model_build.catalog import Catalog, Format
from stacks.build_target import PROJECT_ROOT, catalog_in_project
from stacks.settings import Settings


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
        self.store = ModelStore(self, "ModelStore", encryption_key=self.encryption_key)
        self.image = TritonImage(self, "TritonImage", tag=settings.triton_image_tag)
        self.endpoint = TritonEndpoint(
            self,
            "Triton",
            store=self.store,
            image=self.image,
            instance_type=settings.instance_type,
            initial_instance_count=settings.initial_instance_count,
            encryption_key=self.encryption_key,
            encrypt_volume=settings.endpoint_volume_accepts_kms_key,
        )
        self.build_runner = ModelBuildRunner(
            self,
            "ModelBuild",
            store=self.store,
            project_root=PROJECT_ROOT,
            catalog=catalog_in_project(settings),
            compute_type=settings.builder_compute_type,
            triton_image_tag=settings.triton_image_tag,
            tensorrt=Format.TENSORRT in catalog.formats,
            timeout=Duration.minutes(settings.build_timeout_minutes),
            log_retention=log_retention(settings.build_log_retention_days),
            encryption_key=self.encryption_key,
        )
        self.build = ModelBuildTrigger(
            self,
            "ModelBuildTrigger",
            project=self.build_runner.project,
            fingerprint=self.build_runner.fingerprint,
            log_retention=log_retention(settings.build_log_retention_days),
        )
        # In one deployment: the store exists, the build publishes the models, then the endpoint changes.
        self.endpoint.model.node.add_dependency(self.build.resource)
        self.autoscaling = EndpointAutoscaling(
            self,
            "Autoscaling",
            endpoint_name=self.endpoint.endpoint_name,
            variant_name=self.endpoint.variant_name,
            min_capacity=settings.min_instance_count,
            max_capacity=settings.max_instance_count,
            gpu_utilization_target=settings.gpu_utilization_target,
            invocations_per_instance_target=settings.invocations_per_instance_target,
            scale_in_cooldown=Duration.seconds(settings.scale_in_cooldown_seconds),
            scale_out_cooldown=Duration.seconds(settings.scale_out_cooldown_seconds),
        )
        self.monitoring = EndpointMonitoring(
            self,
            "Monitoring",
            endpoint_name=self.endpoint.endpoint_name,
            variant_name=self.endpoint.variant_name,
            thresholds=settings.alarm_thresholds,
            alarm_email=settings.alarm_email,
            min_instances=settings.min_instance_count,
            max_instances=settings.max_instance_count,
        )

        CfnOutput(self, "EndpointName", value=self.endpoint.endpoint_name)
        CfnOutput(self, "ModelBucketName", value=self.store.bucket.bucket_name)
        CfnOutput(self, "ModelPrefixUrl", value=self.store.model_prefix_url)
        CfnOutput(self, "AlarmTopicArn", value=self.monitoring.alarm_topic.topic.topic_arn)
        CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard.dashboard_name)

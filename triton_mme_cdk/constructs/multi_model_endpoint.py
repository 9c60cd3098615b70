"""The whole multi-model endpoint as one construct: what a platform team embeds in its own CDK app
(docs/embedding.md, docs/constructs.md)."""

from __future__ import annotations

from dataclasses import replace

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from triton_mme_cdk.constructs.build.checked_build import CheckedModelBuild
from triton_mme_cdk.constructs.dedicated.dedicated_models import DedicatedModels
from triton_mme_cdk.constructs.endpoint.deployment_events import DeploymentEvents
from triton_mme_cdk.constructs.endpoint.endpoint_autoscaling import EndpointAutoscaling
from triton_mme_cdk.constructs.endpoint.endpoint_logs import EndpointLogs
from triton_mme_cdk.constructs.endpoint.triton_endpoint import TritonEndpoint
from triton_mme_cdk.constructs.endpoint.triton_image import TritonImage
from triton_mme_cdk.constructs.monitoring.model_observability import ModelObservability
from triton_mme_cdk.constructs.monitoring.monitoring import EndpointMonitoring
from triton_mme_cdk.constructs.multi_model_endpoint_props import TritonMultiModelEndpointProps, validate
from triton_mme_cdk.constructs.operator_access import OperatorAccess
from triton_mme_cdk.constructs.store.model_store import ModelStore, ModelStoreProps
from triton_mme_cdk.settings.placement_rules import dedicated_entries


class TritonMultiModelEndpoint(Construct):
    """A SageMaker GPU multi-model endpoint served by NVIDIA Triton, with its model store, its GPU model
    build and serving check, its autoscaling, monitoring and guarded updates.

    Raises SettingsError (a ValueError naming the props) or CatalogError, one line each, for props that
    cannot deploy with their catalog (`validate`). Children: `store` (ModelStore), `image`, `endpoint`
    (TritonEndpoint: `cfn_model`, `cfn_endpoint_config`, `cfn_endpoint`), `endpoint_logs`, `build`
    (CheckedModelBuild: `runner`, `serving_check`, `engine`, `state_machine`), `autoscaling` (None without),
    `monitoring`, `models`, `deployment_events`, `operators` (the acceptance role and the models policy),
    `promotion`, and `dedicated` (DedicatedModels: `endpoint`, `archive_locations`) for a catalog with
    `placement: dedicated` entries (None without).
    `grant_invoke` lets a principal call both endpoints.
    """

    def __init__(self, scope: Construct, construct_id: str, props: TritonMultiModelEndpointProps) -> None:
        super().__init__(scope, construct_id)
        name = props.endpoint_name or Stack.of(scope).stack_name
        self.props = props = validate(replace(props, endpoint_name=name))
        endpoint, scaling, key = props.endpoint, props.scaling, props.encryption_key
        self.store = ModelStore(self, "ModelStore", ModelStoreProps(encryption_key=key))
        self.image = TritonImage(self, "TritonImage", tag=endpoint.triton_image_tag)
        self.endpoint = TritonEndpoint(
            self,
            "Triton",
            name=name,
            store=self.store,
            image=self.image,
            instance_type=endpoint.instance_type,
            initial_instance_count=scaling.initial_instance_count,
            encryption_key=key,
            encrypt_volume=endpoint.volume_accepts_kms_key,
            inference_ami_version=endpoint.resolved_inference_ami,
            network_isolation=endpoint.network_isolation,
        )
        self.endpoint_logs = EndpointLogs(
            self, "EndpointLogs", endpoint_name=self.endpoint.endpoint_name, retention=endpoint.log_retention
        )
        # "Default": the build's resources keep the logical IDs they had before it was a unit of its own (a
        # new ID would replace them, and build every model again).
        self.build = CheckedModelBuild(
            self,
            "Default",
            store=self.store,
            image=self.image,
            catalog=props.catalog,
            catalog_files=props.catalog_files,
            runner=props.build,
            encryption_key=key,
        )
        # The Model and the endpoint config do not wait: CreateModel and CreateEndpointConfig check the image,
        # the instance type and the inference AMI in the deployment's first minutes. The endpoint waits: it
        # starts serving the prefix, or moves to a new image, only once the build's archives passed the
        # serving check in that image (docs/deploy.md, "What waits for the build").
        self.endpoint.endpoint.node.add_dependency(self.build.done)
        self.autoscaling = (
            EndpointAutoscaling(
                self,
                "Autoscaling",
                endpoint_name=self.endpoint.endpoint_name,
                variant_name=self.endpoint.variant_name,
                scaling=scaling,
            )
            if scaling.enabled
            else None
        )
        self.monitoring = EndpointMonitoring(
            self,
            "Monitoring",
            endpoint_name=name,
            variant_name=self.endpoint.variant_name,
            thresholds=props.alarms,
            min_instances=scaling.min_instance_count,
            max_instances=scaling.max_instance_count,
        )
        # Loads, evictions, failed loads per TargetModel from the endpoint's own log (docs/observability.md).
        self.models = ModelObservability(
            self,
            "ModelObservability",
            endpoint_name=name,
            endpoint_log_group_name=self.endpoint_logs.log_group_name,
            log_group_ready=self.endpoint_logs.retention,
            retention=endpoint.log_retention,
            cache_hit=self.monitoring.metrics.cache_hit_ratio(),
            evictions_per_minute=props.alarms.thrash_evictions_per_minute,
            alarm_topic=self.monitoring.alarm_topic.topic,
        )
        self.monitoring.dashboard.add_section("Per model", self.models.dashboard_widgets())
        # Updates shift traffic step by step and roll back on the monitoring's alarms, which exist before the
        # endpoint: they watch it by its fixed name (guard_updates).
        self.endpoint.guard_updates(props.updates, rollback_alarms=self.monitoring.rollback_alarms)
        # How SageMaker carried out each update, for the acceptance run: recorded from before the endpoint's
        # first update on (the rule matches the endpoint's fixed name).
        self.deployment_events = DeploymentEvents(
            self, "DeploymentEvents", endpoint_name=name, retention=endpoint.log_retention
        )
        self.endpoint.endpoint.node.add_dependency(self.deployment_events.rule, self.deployment_events.policy)
        # Exactly what `triton-mme acceptance` and `triton-mme models --stack` call (docs/first-deploy.md).
        self.operators = OperatorAccess(
            self,
            "Operators",
            endpoint=self.endpoint,
            store=self.store,
            deployment_events=self.deployment_events,
            alarms=list(self.monitoring.alarms.values()),
            build_state_machine=self.build.state_machine,
            encryption_key=key,
        )
        # The live manifest moves to this build only once the endpoint serves this deployment's config.
        self.promotion = self.build.promote_when_served(self.endpoint)
        self.dedicated = (
            DedicatedModels(
                self,
                "Dedicated",
                props=props,
                build=self.build,
                image=self.image,
                endpoint_logs=self.endpoint_logs,
                monitoring=self.monitoring,
                operators=self.operators,
            )
            if dedicated_entries(props.catalog)
            else None
        )

    @property
    def endpoint_name(self) -> str:
        """The endpoint's name, as a reference (what depends on it comes after the endpoint)."""
        return self.endpoint.endpoint_name

    @property
    def cfn_endpoint(self) -> sagemaker.CfnEndpoint:
        return self.endpoint.cfn_endpoint

    @property
    def cfn_endpoint_config(self) -> sagemaker.CfnEndpointConfig:
        return self.endpoint.cfn_endpoint_config

    @property
    def cfn_model(self) -> sagemaker.CfnModel:
        return self.endpoint.cfn_model

    @property
    def dedicated_endpoint_name(self) -> str | None:
        """The inference component endpoint's name, as a reference (None without dedicated entries)."""
        return self.dedicated.endpoint.endpoint_name if self.dedicated is not None else None

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` call sagemaker:InvokeEndpoint on the endpoint (any TargetModel) and, with dedicated
        entries, on the inference component endpoint (any of its components)."""
        grant = self.endpoint.grant_invoke(grantee)
        if self.dedicated is not None:
            grant = grant.combine(self.dedicated.endpoint.grant_invoke(grantee))
        return grant

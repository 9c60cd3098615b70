from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from constructs import Construct

from triton_mme.catalog import ModelEntry
from triton_mme.core.naming import inference_component_name
from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.constructs.dedicated.dedicated_model import DedicatedModel
from triton_mme_cdk.constructs.endpoint.hosting_role import HostingRole
from triton_mme_cdk.constructs.endpoint.triton_image import TritonImage
from triton_mme_cdk.constructs.store.model_store import ModelStore
from triton_mme_cdk.settings import AlarmThresholds, ScalingSettings, UpdatePolicy
from triton_mme_cdk.settings.placement_rules import copy_footprint

VARIANT_NAME = "AllTraffic"


class InferenceComponentEndpoint(Construct):
    """An endpoint that hosts inference components, one `DedicatedModel` per entry of `entries`.

    Its endpoint config names no Model: SageMaker runs each component's container with the config's execution
    role (a `HostingRole` of its own), and manages the instances (`instances`: min, initial, max; one
    single-GPU instance per copy) as the components' copies ask. The endpoint and every component have fixed
    names, so their alarms exist before them. `artifact_urls` maps each model to its archive's S3 URL
    (a reference, ArchiveLocations). Children: `hosting`, `endpoint_config`, `endpoint`, `models` (by model
    name), `component_names` (model -> inference component name).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        store: ModelStore,
        image: TritonImage,
        environment: Mapping[str, str],
        entries: Sequence[ModelEntry],
        artifact_urls: Mapping[str, str],
        instance_type: str,
        instances: tuple[int, int, int],
        scaling: ScalingSettings,
        inference_ami_version: str | None = None,
        network_isolation: bool = True,
        encryption_key: kms.IKey | None = None,
        encrypt_volume: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.name = name
        self.variant_name = VARIANT_NAME
        self.instance_type, self.instances = instance_type, instances
        self.hosting = HostingRole(
            self,
            "Hosting",
            store=store,
            image_repository_arn=image.repository_arn,
            endpoint_name=name,
            encryption_key=encryption_key,
        )
        lowest, initial, highest = instances
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "Config",
            execution_role_arn=self.hosting.role.role_arn,
            enable_network_isolation=network_isolation,
            kms_key_id=encryption_key.key_arn if encryption_key is not None and encrypt_volume else None,
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=VARIANT_NAME,
                    instance_type=instance_type,
                    initial_instance_count=initial,
                    inference_ami_version=inference_ami_version,
                    managed_instance_scaling=sagemaker.CfnEndpointConfig.ManagedInstanceScalingProperty(
                        status="ENABLED", min_instance_count=lowest, max_instance_count=highest
                    ),
                    routing_config=sagemaker.CfnEndpointConfig.RoutingConfigProperty(
                        routing_strategy=PLATFORM.components.endpoint.routing_strategy
                    ),
                )
            ],
        )
        # CreateEndpointConfig passes the role: its policy must exist first.
        self.endpoint_config.node.add_dependency(self.hosting.policy)
        self.endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=name,
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
        )
        self.endpoint_name = self.endpoint.attr_endpoint_name
        self.models: dict[str, DedicatedModel] = {}
        for entry in entries:
            assert entry.dedicated is not None
            self.models[entry.name] = DedicatedModel(
                self,
                f"Model-{entry.name}",
                name=inference_component_name(name, entry.name),
                endpoint_name=self.endpoint_name,
                variant_name=VARIANT_NAME,
                image_uri=image.image_uri,
                artifact_url=artifact_urls[entry.name],
                environment=environment,
                footprint=copy_footprint(entry),
                placement=entry.dedicated,
                scaling=scaling,
            )
        self.component_names = {model: dedicated.name for model, dedicated in self.models.items()}

    @property
    def endpoint_arn(self) -> str:
        return self.endpoint.ref

    @property
    def component_arns(self) -> list[str]:
        return [dedicated.component.attr_inference_component_arn for dedicated in self.models.values()]

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` call sagemaker:InvokeEndpoint on this endpoint and its inference components: the
        service authorization reference lists `inference-component` as a resource of InvokeEndpoint beside
        `endpoint`, so a request naming a component may be checked against the component's ARN as well."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["sagemaker:InvokeEndpoint"],
            resource_arns=[self.endpoint_arn, *self.component_arns],
        )

    def grant_describe(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` read this endpoint's and its components' status (DescribeEndpoint,
        DescribeInferenceComponent): what the acceptance run's component verdicts read
        (triton_mme/acceptance/verdicts.py)."""
        endpoint = iam.Grant.add_to_principal(
            grantee=grantee, actions=["sagemaker:DescribeEndpoint"], resource_arns=[self.endpoint_arn]
        )
        components = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["sagemaker:DescribeInferenceComponent"],
            resource_arns=self.component_arns,
        )
        return endpoint.combine(components)

    def guard_updates(
        self, policy: UpdatePolicy, *, thresholds: AlarmThresholds, alarm_topic: sns.ITopic
    ) -> list[cloudwatch.Alarm]:
        """Every component rolls its copies over on an update and rolls back on its own 5XX alarm
        (DedicatedModel.guard_updates); returns the alarms."""
        alarms = [
            dedicated.guard_updates(policy, thresholds=thresholds, alarm_topic=alarm_topic)
            for dedicated in self.models.values()
        ]
        # SageMaker reads the rollback alarms with the endpoint's execution role.
        describe = iam.PolicyStatement(
            actions=["cloudwatch:DescribeAlarms"], resources=[alarm.alarm_arn for alarm in alarms]
        )
        self.hosting.policy.add_statements(describe)
        return alarms

    def dashboard_widgets(self) -> list[cloudwatch.IWidget]:
        """Per component: invocations and errors, and the model's latency."""
        return [widget for dedicated in self.models.values() for widget in dedicated.dashboard_widgets()]

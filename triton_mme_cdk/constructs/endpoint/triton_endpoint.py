from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Annotations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from triton_mme.core.triton_container import CONTAINER_ENVIRONMENT
from triton_mme_cdk.constructs.endpoint.deployment_policy import deployment_config
from triton_mme_cdk.constructs.endpoint.hosting_role import HostingRole
from triton_mme_cdk.constructs.endpoint.triton_image import TritonImage
from triton_mme_cdk.constructs.scanners.checkov import skip_checks
from triton_mme_cdk.constructs.store.model_store import ModelStore
from triton_mme_cdk.settings import UpdatePolicy
from triton_mme_cdk.settings.deployment_rules import variant_count_problem

VARIANT_NAME = "AllTraffic"


class TritonEndpoint(Construct):
    """A Triton multi-model Model, its endpoint config and the endpoint named `name`.

    The model and endpoint config have no physical names (every change replaces them). The endpoint has
    one: alarms watch it by name, and the alarms that guard its updates must exist before the endpoint
    names them (guard_updates), so its name is known before it exists. Endpoints are updated in place, so
    a fixed name never blocks an update.

    `inference_ami_version` picks the variant's host image and with it the NVIDIA driver (default: the
    platform's, driver 470 on ml.g4dn/g5/p3). `network_isolation` keeps the container off the network:
    SageMaker itself still downloads the archives the container loads.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        store: ModelStore,
        image: TritonImage,
        instance_type: str,
        initial_instance_count: int,
        encryption_key: kms.IKey | None = None,
        encrypt_volume: bool = False,
        inference_ami_version: str | None = None,
        network_isolation: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        self.hosting = HostingRole(
            self,
            "Hosting",
            store=store,
            image_repository_arn=image.repository_arn,
            endpoint_name=name,
            encryption_key=encryption_key,
        )
        self.model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=self.hosting.role.role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image.image_uri,
                mode="MultiModel",
                model_data_url=store.model_prefix_url,
                # Triton's log levels (verbose off, info on: the lines that name a model, which the per-model
                # figures read) and its ping mode (liveness, which the image's entry point does not pass on
                # by itself): triton_mme/core/triton_container.py. The local Triton runs with the same.
                environment=dict(CONTAINER_ENVIRONMENT),
            ),
            enable_network_isolation=network_isolation,
        )
        self.model.node.add_dependency(self.hosting.policy)
        if not network_isolation:
            skip_checks(
                self.model,
                {
                    "CKV_AWS_370": "Network isolation is off only where the deployment asked for it "
                    "(network_isolation=False; on by default): the way out for a container that fails to "
                    "start isolated."
                },
            )

        volume_key = encryption_key.key_arn if encryption_key is not None and encrypt_volume else None
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "Config",
            kms_key_id=volume_key,
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=VARIANT_NAME,
                    model_name=self.model.attr_model_name,
                    instance_type=instance_type,
                    initial_instance_count=initial_instance_count,
                    initial_variant_weight=1.0,
                    inference_ami_version=inference_ami_version,
                )
            ],
        )
        self._explain_volume_encryption(instance_type, encryption_key, volume_key)

        self.endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=name,
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
            # Keeps the autoscaled instance count when a new endpoint config replaces this one: the new fleet
            # of a guarded update starts at that count, which its step sizes are shares of.
            retain_all_variant_properties=True,
        )
        # `name` for what may exist before the endpoint (alarms, dashboard); `endpoint_name` (a reference)
        # for what must come after it (scaling, logs, the manifest promotion).
        self.name = name
        self.endpoint_name = self.endpoint.attr_endpoint_name
        self.variant_name = VARIANT_NAME
        self.variant_count = 1

    @property
    def cfn_model(self) -> sagemaker.CfnModel:
        return self.model

    @property
    def cfn_endpoint_config(self) -> sagemaker.CfnEndpointConfig:
        return self.endpoint_config

    @property
    def cfn_endpoint(self) -> sagemaker.CfnEndpoint:
        return self.endpoint

    @property
    def endpoint_arn(self) -> str:
        """The endpoint's ARN (CfnEndpoint's Ref)."""
        return self.endpoint.ref

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` call sagemaker:InvokeEndpoint on this endpoint (any TargetModel)."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=["sagemaker:InvokeEndpoint"], resource_arns=[self.endpoint_arn]
        )

    def guard_updates(self, policy: UpdatePolicy, *, rollback_alarms: Sequence[cloudwatch.IAlarm]) -> None:
        """Update the endpoint with `policy` and roll back when one of `rollback_alarms` fires.

        The endpoint refers to the alarms, so they exist before it does, also on the first deployment; they
        watch it by its fixed name, not by a reference (which would make a dependency cycle). SageMaker reads
        the alarms with the hosting role (cloudwatch:DescribeAlarms, "Auto-Rollback Configuration and
        Monitoring").
        """
        problem = variant_count_problem(policy.strategy, self.variant_count)
        if problem:
            raise ValueError(f"a {policy.strategy.value} update cannot guard this endpoint: {problem}")
        self.endpoint.deployment_config = deployment_config(policy, [a.alarm_name for a in rollback_alarms])
        self.hosting.policy.add_statements(
            iam.PolicyStatement(
                actions=["cloudwatch:DescribeAlarms"], resources=[a.alarm_arn for a in rollback_alarms]
            )
        )

    def _explain_volume_encryption(
        self, instance_type: str, key: kms.IKey | None, volume_key: str | None
    ) -> None:
        if key is not None and volume_key is None:
            Annotations.of(self).add_warning_v2(
                "triton-mme:volume-kms-key-skipped",
                f"The encryption key encrypts the model bucket only: {instance_type} has local NVMe "
                "instance storage (hardware-encrypted), and SageMaker rejects an endpoint-config "
                "KmsKeyId for such types.",
            )

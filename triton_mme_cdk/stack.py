"""The app's one stack: the whole multi-model endpoint construct for the settings (its props made and checked
by the composition), and the outputs clients, preflight and the acceptance run read."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from triton_mme_cdk.acceptance_settings import ACCEPTANCE_SETTINGS_OUTPUT, acceptance_settings
from triton_mme_cdk.constructs.multi_model_endpoint import (
    TritonMultiModelEndpoint,
    TritonMultiModelEndpointProps,
)
from triton_mme_cdk.settings import Settings

# The output naming the endpoint: clients and the preflight checks find the deployed endpoint through it.
ENDPOINT_NAME_OUTPUT = "EndpointName"
# The output the deploy workflow reads the acceptance role from (.github/workflows/deploy.yml).
ACCEPTANCE_ROLE_OUTPUT = "AcceptanceRoleArn"
# With `placement: dedicated` entries: the inference component endpoint, and each dedicated model's
# component as a JSON object {model: inference component name}, which the client routes by.
IC_ENDPOINT_NAME_OUTPUT = "InferenceComponentEndpointName"
IC_NAMES_OUTPUT = "InferenceComponentNames"


class TritonMmeStack(Stack):
    """A SageMaker GPU multi-model endpoint served by Triton, its model store and its autoscaling."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        props: TritonMultiModelEndpointProps,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        self.encryption_key = (
            kms.Key.from_key_arn(self, "EncryptionKey", settings.kms_key_arn)
            if settings.kms_key_arn
            else None
        )
        # "Default" is left out of the children's logical IDs: they are those the stack had before the
        # construct existed.
        self.mme = mme = TritonMultiModelEndpoint(
            self,
            "Default",
            replace(props, encryption_key=self.encryption_key),
        )
        CfnOutput(self, ENDPOINT_NAME_OUTPUT, value=mme.endpoint_name)
        dedicated = mme.dedicated.endpoint if mme.dedicated is not None else None
        if dedicated is not None:
            CfnOutput(self, IC_ENDPOINT_NAME_OUTPUT, value=dedicated.endpoint_name)
            CfnOutput(
                self,
                IC_NAMES_OUTPUT,
                description="The inference component of each dedicated model, as JSON (docs/constructs.md)",
                value=self.to_json_string(dedicated.component_names),
            )
        CfnOutput(self, "ModelBucketName", value=mme.store.bucket.bucket_name)
        CfnOutput(self, "ModelPrefixUrl", value=mme.store.model_prefix_url)
        CfnOutput(
            self, "LiveManifestUrl", value=mme.store.bucket.s3_url_for_object(mme.store.live_manifest_key)
        )
        CfnOutput(self, "AlarmTopicArn", value=mme.monitoring.alarm_topic.topic.topic_arn)
        CfnOutput(self, "DashboardName", value=mme.monitoring.dashboard.dashboard.dashboard_name)
        CfnOutput(self, "EndpointLogGroup", value=mme.endpoint_logs.log_group_name)
        CfnOutput(
            self,
            "BuildStateMachineArn",
            description="The deploy's model build engine: one execution per build (docs/deploy.md)",
            value=mme.build.state_machine.state_machine_arn,
        )
        CfnOutput(
            self,
            ACCEPTANCE_ROLE_OUTPUT,
            description="The role the deploy workflow assumes for `make acceptance` (docs/first-deploy.md)",
            value=mme.operators.acceptance_role.role_arn,
        )
        CfnOutput(
            self,
            "ModelsPolicyArn",
            description="A managed policy for `triton-mme models --stack` (docs/observability.md)",
            value=mme.operators.models_policy.managed_policy_arn,
        )
        CfnOutput(
            self,
            ACCEPTANCE_SETTINGS_OUTPUT,
            description="What `triton-mme acceptance` checks the live endpoint against (docs/acceptance.md)",
            value=acceptance_settings(
                self,
                endpoint=mme.endpoint,
                store=mme.store,
                instance_type=settings.endpoint.instance_type,
                initial_instance_count=settings.scaling.initial_instance_count,
                inference_ami_version=settings.endpoint.resolved_inference_ami,
                network_isolation=settings.endpoint.network_isolation,
                image_uri=mme.image.image_uri,
                image_tag=mme.image.tag,
                build_fingerprint=mme.build.fingerprint,
                build_state_machine_arn=mme.build.state_machine.state_machine_arn,
                alarms=list(mme.monitoring.alarms.values()),
                autoscaling=mme.autoscaling,
                deployment_events=mme.deployment_events,
                dedicated=dedicated,
            ),
        )

"""What the deployed stack promises about its endpoint, as one stack output `triton-mme acceptance` reads.

The acceptance run (triton_mme/acceptance, docs/acceptance.md) compares the live endpoint with the template
that created it. Values the template only knows as references (the endpoint config's and model's names,
the alarms' names, the image URI's registry and region) resolve at deploy time inside this one JSON output,
so the run needs no copy of the settings and no read of the template. Keys are the camelCase of CDK's L1
properties; the deployment configuration is CloudFormation's (the SageMaker API's, first letters lowered).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_applicationautoscaling as applicationautoscaling
from aws_cdk import aws_cloudwatch as cloudwatch

from triton_mme.acceptance.stack import ACCEPTANCE_SETTINGS_OUTPUT
from triton_mme_cdk.constructs.dedicated.inference_component_endpoint import InferenceComponentEndpoint
from triton_mme_cdk.constructs.endpoint.deployment_events import DeploymentEvents
from triton_mme_cdk.constructs.endpoint.endpoint_autoscaling import EndpointAutoscaling
from triton_mme_cdk.constructs.endpoint.triton_endpoint import TritonEndpoint
from triton_mme_cdk.constructs.store.model_store import ModelStore

__all__ = ["ACCEPTANCE_SETTINGS_OUTPUT", "acceptance_settings"]


def acceptance_settings(
    stack: Stack,
    *,
    endpoint: TritonEndpoint,
    store: ModelStore,
    instance_type: str,
    initial_instance_count: int,
    inference_ami_version: str | None,
    network_isolation: bool,
    image_uri: str,
    image_tag: str,
    build_fingerprint: str,
    build_state_machine_arn: str,
    alarms: Sequence[cloudwatch.IAlarm],
    autoscaling: EndpointAutoscaling | None,
    deployment_events: DeploymentEvents,
    dedicated: InferenceComponentEndpoint | None = None,
) -> str:
    """The output's value: a JSON document, with the references CloudFormation resolves."""
    scaling: dict[str, Any] | None = None
    if autoscaling is not None:
        target = autoscaling.target.node.default_child
        assert isinstance(target, applicationautoscaling.CfnScalableTarget)
        policies = [autoscaling.gpu_policy, autoscaling.invocations_policy]
        scaling = {
            "serviceNamespace": target.service_namespace,
            "resourceId": target.resource_id,
            "scalableDimension": target.scalable_dimension,
            "minCapacity": target.min_capacity,
            "maxCapacity": target.max_capacity,
            "policyCount": sum(policy is not None for policy in policies),
        }
    document: dict[str, Any] = {
        "endpointName": endpoint.endpoint_name,
        "endpointConfigName": endpoint.endpoint_config.attr_endpoint_config_name,
        "modelName": endpoint.model.attr_model_name,
        "variantName": endpoint.variant_name,
        "instanceType": instance_type,
        "initialInstanceCount": initial_instance_count,
        "inferenceAmiVersion": inference_ami_version,
        "networkIsolation": network_isolation,
        "image": image_uri,
        "imageTag": image_tag,
        "modelDataUrl": store.model_prefix_url,
        "liveManifestUrl": store.bucket.s3_url_for_object(store.live_manifest_key),
        "deploymentConfig": endpoint.endpoint.deployment_config,
        "buildFingerprint": build_fingerprint,
        "buildStateMachineArn": build_state_machine_arn,
        "alarmNames": [alarm.alarm_name for alarm in alarms],
        "scaling": scaling,
        "deploymentEventLogGroup": deployment_events.log_group_name,
    }
    # Only with dedicated entries, so a stack without them promises what it always did.
    if dedicated is not None:
        document["inferenceComponents"] = inference_components(dedicated)
    return stack.to_json_string(document)


def inference_components(dedicated: InferenceComponentEndpoint) -> dict[str, Any]:
    """The inference component endpoint and, per dedicated model, its component, copies and alarm."""
    config = dedicated.endpoint_config
    return {
        "endpointName": dedicated.endpoint_name,
        "endpointConfigName": config.attr_endpoint_config_name,
        "variantName": dedicated.variant_name,
        "instanceType": dedicated.instance_type,
        "instanceCounts": dict(zip(("min", "initial", "max"), dedicated.instances, strict=True)),
        "components": {
            model: {
                "name": component.name,
                "copyCount": component.placement.copies,
                "copyRange": list(component.placement.copy_range),
                "scaled": component.scaling is not None,
                "alarmName": component.errors_5xx.alarm_name if component.errors_5xx else None,
            }
            for model, component in dedicated.models.items()
        },
    }

"""The Triton endpoint in a bare stack: Model, endpoint config and endpoint, with their driver and network."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Annotations, Match, Template
from synth_support import KEY_ARN, bare_stack

from infra.constructs.model_store import ModelStore
from infra.constructs.triton_endpoint import TritonEndpoint
from infra.constructs.triton_image import TritonImage

AMI = "al2023-ami-sagemaker-inference-gpu-4-1"


def endpoint_stack(**overrides: Any) -> tuple[Template, TritonEndpoint]:
    stack = bare_stack()
    key = kms.Key.from_key_arn(stack, "Key", KEY_ARN) if overrides.pop("with_key", False) else None
    props: dict[str, Any] = {
        "instance_type": "ml.g5.xlarge",
        "initial_instance_count": 2,
        "inference_ami_version": AMI,
        **overrides,
    }
    endpoint = TritonEndpoint(
        stack,
        "Triton",
        store=ModelStore(stack, "Store"),
        image=TritonImage(stack, "Image", tag="25.04-py3"),
        encryption_key=key,
        **props,
    )
    return Template.from_stack(stack), endpoint


@pytest.fixture(scope="module")
def default() -> tuple[Template, TritonEndpoint]:
    return endpoint_stack()


def test_model_is_an_unnamed_network_isolated_multi_model_triton_container(default: tuple) -> None:
    template, _ = default
    template.has_resource(
        "AWS::SageMaker::Model",
        {
            "Properties": {
                "EnableNetworkIsolation": True,
                "ExecutionRoleArn": {"Fn::GetAtt": [Match.string_like_regexp("^TritonHostingRole"), "Arn"]},
                "PrimaryContainer": {
                    "Mode": "MultiModel",
                    "Image": Match.any_value(),
                    "ModelDataUrl": {
                        "Fn::Join": [
                            "",
                            ["s3://", {"Ref": Match.string_like_regexp("^StoreBucket")}, "/models/"],
                        ]
                    },
                    "Environment": {"SAGEMAKER_TRITON_LOG_VERBOSE": "0"},
                },
            },
            # A Model created before its role's policy exists fails intermittently.
            "DependsOn": [Match.string_like_regexp("^TritonHostingPolicy")],
        },
    )


def test_network_isolation_can_be_turned_off() -> None:
    template, _ = endpoint_stack(network_isolation=False)
    template.has_resource_properties("AWS::SageMaker::Model", {"EnableNetworkIsolation": False})


def test_config_has_one_unnamed_variant_on_the_given_type_count_and_inference_ami(default: tuple) -> None:
    template, _ = default
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "EndpointConfigName": Match.absent(),
            "KmsKeyId": Match.absent(),
            "ProductionVariants": [
                {
                    "VariantName": "AllTraffic",
                    "ModelName": {"Fn::GetAtt": [Match.string_like_regexp("^TritonModel"), "ModelName"]},
                    "InstanceType": "ml.g5.xlarge",
                    "InitialInstanceCount": 2,
                    "InitialVariantWeight": 1,
                    "InferenceAmiVersion": AMI,
                }
            ],
        },
    )


def test_without_an_inference_ami_the_variant_keeps_the_platform_default() -> None:
    template, _ = endpoint_stack(inference_ami_version=None)
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"ProductionVariants": [Match.object_like({"InferenceAmiVersion": Match.absent()})]},
    )


def test_endpoint_is_unnamed_and_keeps_autoscaled_capacity_across_config_changes(default: tuple) -> None:
    template, endpoint = default
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "EndpointName": Match.absent(),
            "EndpointConfigName": {
                "Fn::GetAtt": [Match.string_like_regexp("^TritonConfig"), "EndpointConfigName"]
            },
            "RetainAllVariantProperties": True,
        },
    )
    assert endpoint.variant_name == "AllTraffic"
    assert endpoint.endpoint.stack.resolve(endpoint.endpoint_name)["Fn::GetAtt"][1] == "EndpointName"


def test_volume_key_is_set_where_the_instance_type_accepts_one() -> None:
    template, endpoint = endpoint_stack(
        instance_type="ml.p3.2xlarge", with_key=True, encrypt_volume=True, inference_ami_version=None
    )
    template.has_resource_properties("AWS::SageMaker::EndpointConfig", {"KmsKeyId": KEY_ARN})
    assert not _warnings(endpoint)


def test_volume_key_is_left_off_with_a_warning_on_types_with_nvme_storage() -> None:
    template, endpoint = endpoint_stack(instance_type="ml.g5.2xlarge", with_key=True, encrypt_volume=False)
    template.has_resource_properties("AWS::SageMaker::EndpointConfig", {"KmsKeyId": Match.absent()})
    (warning,) = _warnings(endpoint)
    assert "ml.g5.2xlarge has local NVMe instance storage" in warning


def test_no_warning_without_a_key(default: tuple) -> None:
    assert not _warnings(default[1])


def _warnings(endpoint: TritonEndpoint) -> list[str]:
    messages = Annotations.from_stack(endpoint.endpoint.stack).find_warning(
        "*", Match.string_like_regexp("encryption key")
    )
    return [str(message.entry.data) for message in messages]

"""Endpoint autoscaling in a bare stack holding only an endpoint: the target, GPU and invocation policies."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk.assertions import Match, Template
from synth_support import bare_stack

from triton_mme_cdk.constructs.endpoint.endpoint_autoscaling import EndpointAutoscaling
from triton_mme_cdk.settings import ScalingSettings

ENDPOINT_NAME = {"Fn::GetAtt": ["Endpoint", "EndpointName"]}


def scaling_stack(**overrides: Any) -> tuple[Template, EndpointAutoscaling]:
    stack = bare_stack()
    endpoint = sagemaker.CfnEndpoint(stack, "Endpoint", endpoint_config_name="config")
    endpoint.override_logical_id("Endpoint")
    settings = ScalingSettings(
        **{"min_instance_count": 1, "initial_instance_count": 1, "max_instance_count": 5, **overrides}
    )
    scaling = EndpointAutoscaling(
        stack,
        "Scaling",
        endpoint_name=endpoint.attr_endpoint_name,
        variant_name="AllTraffic",
        scaling=settings,
    )
    return Template.from_stack(stack), scaling


@pytest.fixture(scope="module")
def default() -> tuple[Template, EndpointAutoscaling]:
    return scaling_stack()


def test_target_is_the_variant_of_this_endpoint_with_the_service_linked_role(default: tuple) -> None:
    template, _ = default
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "ServiceNamespace": "sagemaker",
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "MinCapacity": 1,
            "MaxCapacity": 5,
            # A GetAtt on the endpoint: CloudFormation creates the target after it and deletes it first.
            "ResourceId": {"Fn::Join": ["", ["endpoint/", ENDPOINT_NAME, "/variant/AllTraffic"]]},
            "RoleARN": {
                "Fn::Join": [
                    "",
                    Match.array_with(
                        [
                            ":role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/"
                            "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"
                        ]
                    ),
                ]
            },
        },
    )


def test_gpu_policy_tracks_the_variants_average_gpu_utilization() -> None:
    template, _ = scaling_stack(
        gpu_utilization_target=72.5, scale_in_cooldown_seconds=900, scale_out_cooldown_seconds=120
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyType": "TargetTrackingScaling",
            "ScalingTargetId": {"Ref": Match.string_like_regexp("^ScalingTarget")},
            "TargetTrackingScalingPolicyConfiguration": {
                "CustomizedMetricSpecification": {
                    "MetricName": "GPUUtilization",
                    "Namespace": "/aws/sagemaker/Endpoints",
                    "Dimensions": [
                        {"Name": "EndpointName", "Value": ENDPOINT_NAME},
                        {"Name": "VariantName", "Value": "AllTraffic"},
                    ],
                    "Statistic": "Average",
                    "Unit": "Percent",
                },
                "TargetValue": 72.5,
                "ScaleInCooldown": 900,
                "ScaleOutCooldown": 120,
            },
        },
    )


def test_invocations_policy_only_when_asked(default: tuple) -> None:
    template, scaling = default
    assert scaling.invocations_policy is None
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 1)
    template, scaling = scaling_stack(invocations_per_instance_target=900)
    assert scaling.invocations_policy is not None
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "TargetTrackingScalingPolicyConfiguration": {
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"
                },
                "TargetValue": 900,
                "ScaleInCooldown": 600,
                "ScaleOutCooldown": 200,
            }
        },
    )


def test_no_role_of_its_own(default: tuple) -> None:
    template, scaling = default
    template.resource_count_is("AWS::IAM::Role", 0)
    assert not [c for c in scaling.node.find_all() if isinstance(c, iam.CfnRole)]

"""The hosting role in a bare stack: assumed by SageMaker only, with a separate least-privilege policy."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template
from synth_support import KEY_ARN, bare_stack

from triton_mme_cdk.constructs.endpoint.hosting_role import HostingRole
from triton_mme_cdk.constructs.store.model_store import ModelStore

REPOSITORY_ARN = "arn:aws:ecr:eu-west-1:763104351884:repository/sagemaker-tritonserver"
BUCKET_ARN = {"Fn::GetAtt": [Match.string_like_regexp("^StoreBucket"), "Arn"]}
LOG_GROUPS = [
    "arn:",
    {"Ref": "AWS::Partition"},
    ":logs:",
    {"Ref": "AWS::Region"},
    ":",
    {"Ref": "AWS::AccountId"},
    ":log-group:/aws/sagemaker/Endpoints/triton-mme",
]


def hosting_template(*, with_key: bool = False, endpoint_name: str = "triton-mme") -> Template:
    stack = bare_stack()
    key = kms.Key.from_key_arn(stack, "Key", KEY_ARN) if with_key else None
    HostingRole(
        stack,
        "Hosting",
        store=ModelStore(stack, "Store"),
        image_repository_arn=REPOSITORY_ARN,
        endpoint_name=endpoint_name,
        encryption_key=key,
    )
    return Template.from_stack(stack)


@pytest.fixture(scope="module")
def template() -> Template:
    return hosting_template()


def test_role_is_assumed_by_sagemaker_only_and_holds_no_inline_or_managed_policy(template: Template) -> None:
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    {
                        "Action": "sts:AssumeRole",
                        "Effect": "Allow",
                        "Principal": {"Service": "sagemaker.amazonaws.com"},
                    }
                ],
                "Version": "2012-10-17",
            },
            "ManagedPolicyArns": Match.absent(),
            "Policies": Match.absent(),
        },
    )


def test_policy_grants_exactly_model_reads_image_pulls_logs_and_endpoint_metrics(template: Template) -> None:
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "Roles": [{"Ref": Match.string_like_regexp("^HostingRole")}],
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Action": "s3:GetObject",
                        "Effect": "Allow",
                        "Resource": {"Fn::Join": ["", [BUCKET_ARN, "/models/*"]]},
                    },
                    # Unconditional: a missing archive then answers 404, not 403 (a prefix condition would not
                    # apply to GetObject, which carries no s3:prefix).
                    {"Action": "s3:ListBucket", "Effect": "Allow", "Resource": BUCKET_ARN},
                    {
                        "Action": [
                            "ecr:BatchCheckLayerAvailability",
                            "ecr:BatchGetImage",
                            "ecr:GetDownloadUrlForLayer",
                        ],
                        "Effect": "Allow",
                        "Resource": REPOSITORY_ARN,
                    },
                    {"Action": "ecr:GetAuthorizationToken", "Effect": "Allow", "Resource": "*"},
                    {
                        "Action": [
                            "logs:CreateLogGroup",
                            "logs:CreateLogStream",
                            "logs:DescribeLogStreams",
                            "logs:PutLogEvents",
                        ],
                        "Effect": "Allow",
                        "Resource": [
                            {"Fn::Join": ["", LOG_GROUPS]},
                            {"Fn::Join": ["", [*LOG_GROUPS[:-1], LOG_GROUPS[-1] + ":log-stream:*"]]},
                        ],
                    },
                    {
                        "Action": "cloudwatch:PutMetricData",
                        "Condition": {"StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/Endpoints"}},
                        "Effect": "Allow",
                        "Resource": "*",
                    },
                ],
            },
        },
    )


def _statements(template: Template) -> list[dict[str, Any]]:
    (policy,) = template.find_resources("AWS::IAM::Policy").values()
    return list(policy["Properties"]["PolicyDocument"]["Statement"])


def test_a_key_adds_decrypt_on_that_key_only() -> None:
    statements = _statements(hosting_template(with_key=True))
    assert {"Action": "kms:Decrypt", "Effect": "Allow", "Resource": KEY_ARN} in statements


def test_no_key_means_no_kms_permission(template: Template) -> None:
    assert not [s for s in _statements(template) if str(s["Action"]).startswith("kms:")]


@pytest.mark.parametrize("endpoint_name", ["triton-mme", "other-endpoint"])
def test_logs_go_only_to_the_named_endpoints_own_group_and_its_streams(endpoint_name: str) -> None:
    """SageMaker writes an endpoint's container logs to /aws/sagemaker/Endpoints/<name>; the name is fixed at
    synthesis, so no other endpoint's group (nor a group named after this one's prefix) is writable."""
    (logging,) = [
        s
        for s in _statements(hosting_template(endpoint_name=endpoint_name))
        if "logs:PutLogEvents" in s["Action"]
    ]
    group_arn = [*LOG_GROUPS[:-1], f":log-group:/aws/sagemaker/Endpoints/{endpoint_name}"]
    assert logging["Resource"] == [
        {"Fn::Join": ["", group_arn]},
        {"Fn::Join": ["", [*group_arn[:-1], group_arn[-1] + ":log-stream:*"]]},
    ]

"""The Triton image in a bare stack: a region -> registry account mapping per tag, and the URI from it."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ssm as ssm
from aws_cdk.assertions import Template
from synth_support import bare_stack

from triton_mme.core.platform import registry_accounts
from triton_mme_cdk.constructs.endpoint.triton_image import TritonImage


def image_stack(tag: str) -> tuple[cdk.Stack, TritonImage]:
    """The image and one resource that uses its URI (a template needs a resource)."""
    stack = bare_stack()
    image = TritonImage(stack, "Image", tag=tag)
    ssm.StringParameter(stack, "Uri", string_value=image.image_uri)
    return stack, image


@pytest.mark.parametrize("tag", ["25.04-py3", "25.09-py3", "24.05-py3"])
def test_mapping_holds_every_region_of_the_tag_and_the_uri_reads_it(tag: str) -> None:
    stack, image = image_stack(tag)
    template = Template.from_stack(stack)
    (mapping,) = template.to_json()["Mappings"].values()
    assert mapping == {region: {"account": account} for region, account in registry_accounts(tag).items()}
    (mapping_id,) = template.to_json()["Mappings"]
    assert stack.resolve(image.image_uri) == {
        "Fn::Join": [
            "",
            [
                {"Fn::FindInMap": [mapping_id, {"Ref": "AWS::Region"}, "account"]},
                ".dkr.ecr.",
                {"Ref": "AWS::Region"},
                ".",
                {"Ref": "AWS::URLSuffix"},
                f"/sagemaker-tritonserver:{tag}",
            ],
        ]
    }


def test_repository_arn_is_in_the_registry_account_of_the_region() -> None:
    stack, image = image_stack("25.04-py3")
    (mapping_id,) = Template.from_stack(stack).to_json()["Mappings"]
    assert stack.resolve(image.repository_arn) == {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":ecr:",
                {"Ref": "AWS::Region"},
                ":",
                {"Fn::FindInMap": [mapping_id, {"Ref": "AWS::Region"}, "account"]},
                ":repository/sagemaker-tritonserver",
            ],
        ]
    }

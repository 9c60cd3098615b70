"""checkov skips on a resource (triton_mme_cdk/constructs/scanners/checkov.py): merged, refused for a check
the project does not know or that does not check that resource type."""

from __future__ import annotations

import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from synth_support import bare_stack, template_logical_id

from triton_mme_cdk.constructs.scanners.checkov import CHECKS, skip_checks, skip_function_checks

REASON = "a reason that explains why this check does not apply here"


def test_skips_land_in_the_resources_metadata_beside_earlier_ones() -> None:
    stack = bare_stack()
    bucket = s3.Bucket(stack, "Bucket")
    skip_checks(bucket, {"CKV_AWS_18": REASON})
    skip_checks(bucket, {"CKV_AWS_18": REASON + ", again"})
    bucket_resource = Template.from_stack(stack).to_json()["Resources"][template_logical_id(bucket)]
    assert bucket_resource["Metadata"]["checkov"] == {
        "skip": [{"id": "CKV_AWS_18", "comment": REASON + ", again"}]
    }


def test_an_unknown_check_or_one_for_another_resource_type_is_refused() -> None:
    stack = bare_stack()
    bucket = s3.Bucket(stack, "Bucket")
    with pytest.raises(ValueError, match="not a checkov check this project knows: CKV_AWS_999"):
        skip_checks(bucket, {"CKV_AWS_999": REASON})
    with pytest.raises(ValueError, match="not a check of AWS::S3::Bucket: CKV_AWS_117"):
        skip_function_checks(bucket, calls="S3", invoked="never", failures="none")


def test_the_lambda_checks_each_function_shares_are_in_the_table() -> None:
    assert {"CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_173"} <= set(CHECKS)
    assert all("AWS::Lambda::Function" in CHECKS[c].resource_types for c in ("CKV_AWS_115", "CKV_AWS_173"))

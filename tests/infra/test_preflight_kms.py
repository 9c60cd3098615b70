"""Preflight reads a customer key (kms:DescribeKey, kms:GetKeyPolicy) and says what the stack would miss."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from synth_support import KEY_ARN

from triton_mme_cdk.preflight.kms_key import check_kms_key, undelegated_actions

ACCOUNT = "123456789012"
ROOT = f"arn:aws:iam::{ACCOUNT}:root"
DEFAULT_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "Enable IAM User Permissions",
            "Effect": "Allow",
            "Principal": {"AWS": ROOT},
            "Action": "kms:*",
            "Resource": "*",
        },
    ],
}


@pytest.fixture
def kms() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("kms", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def key(stub: Stubber, policy: dict[str, Any] | None, **metadata: str) -> None:
    described = {
        "KeyId": KEY_ARN.rsplit("/", 1)[1],
        "Arn": KEY_ARN,
        "KeyState": "Enabled",
        "KeyUsage": "ENCRYPT_DECRYPT",
        "KeySpec": "SYMMETRIC_DEFAULT",
        **metadata,
    }
    stub.add_response("describe_key", {"KeyMetadata": described}, {"KeyId": KEY_ARN})
    if policy is not None:
        stub.add_response(
            "get_key_policy", {"Policy": json.dumps(policy)}, {"KeyId": KEY_ARN, "PolicyName": "default"}
        )


def test_the_default_key_policy_passes(kms: tuple[Any, Stubber]) -> None:
    client, stub = kms
    key(stub, DEFAULT_POLICY)
    assert check_kms_key(client, KEY_ARN).line() == (
        f"PASS kms-key: {KEY_ARN} is enabled and its policy lets IAM grant kms:Decrypt, kms:GenerateDataKey"
    )


def test_a_policy_that_does_not_delegate_to_iam_fails_naming_what_is_missing(
    kms: tuple[Any, Stubber],
) -> None:
    client, stub = kms
    admin_only = {
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/Admin"},
                "Action": "kms:*",
                "Resource": "*",
            }
        ]
    }
    key(stub, admin_only)
    assert check_kms_key(client, KEY_ARN).line() == (
        f"FAIL kms-key: the key policy of {KEY_ARN} does not let IAM policies grant kms:Decrypt, "
        f"kms:GenerateDataKey (no unconditional Allow of them to {ROOT}): the stack's roles could not read "
        "or write the bucket; fix: add the default key policy statement "
        f'("Enable IAM User Permissions": Allow kms:* to {ROOT} on "*")'
    )


@pytest.mark.parametrize(
    ("statement", "missing"),
    [
        (
            {
                "Effect": "Allow",
                "Principal": {"AWS": ACCOUNT},
                "Action": ["kms:Decrypt", "kms:Generate*"],
                "Resource": "*",
            },
            [],
        ),
        (
            {"Effect": "Allow", "Principal": {"AWS": [ROOT]}, "Action": "kms:Decrypt", "Resource": "*"},
            ["kms:GenerateDataKey"],
        ),
        (
            {
                "Effect": "Allow",
                "Principal": {"AWS": ROOT},
                "Action": "kms:*",
                "Resource": "*",
                "Condition": {"StringEquals": {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}},
            },
            ["kms:Decrypt", "kms:GenerateDataKey"],
        ),
        (
            {"Effect": "Deny", "Principal": {"AWS": ROOT}, "Action": "kms:*", "Resource": "*"},
            ["kms:Decrypt", "kms:GenerateDataKey"],
        ),
        (
            {
                "Effect": "Allow",
                "Principal": {"Service": "s3.amazonaws.com"},
                "Action": "kms:*",
                "Resource": "*",
            },
            ["kms:Decrypt", "kms:GenerateDataKey"],
        ),
    ],
)
def test_only_an_unconditional_allow_to_the_account_delegates(
    statement: dict[str, Any], missing: list[str]
) -> None:
    assert undelegated_actions({"Statement": statement}, ACCOUNT) == missing


def test_a_disabled_or_asymmetric_key_fails_before_its_policy_is_read(kms: tuple[Any, Stubber]) -> None:
    client, stub = kms
    key(stub, None, KeyState="Disabled")
    assert check_kms_key(client, KEY_ARN).line() == (
        f"FAIL kms-key: {KEY_ARN} is Disabled, ENCRYPT_DECRYPT, SYMMETRIC_DEFAULT; S3 SSE-KMS needs an "
        "Enabled, ENCRYPT_DECRYPT, SYMMETRIC_DEFAULT key; fix: enable the key, or set kmsKeyArn to a "
        "symmetric encryption key"
    )


def test_a_refused_read_says_which_call_and_permission(kms: tuple[Any, Stubber]) -> None:
    client, stub = kms
    key(stub, None)
    stub.add_client_error(
        "get_key_policy", "AccessDeniedException", "not authorized to perform: kms:GetKeyPolicy"
    )
    result = check_kms_key(client, KEY_ARN)
    assert not result.ok
    assert result.detail == (
        "AWS GetKeyPolicy answered AccessDeniedException: not authorized to perform: kms:GetKeyPolicy"
    )

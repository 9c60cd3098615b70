"""The customer key of `kmsKeyArn`: usable for the model bucket, and usable through IAM.

The stack's roles (hosting, build runner, serving check, manifest promotion) get kms:Decrypt and
kms:GenerateDataKey from IAM policies, which count only where the key policy lets IAM grant the key (AWS KMS
developer guide, "Default key policy": the statement allowing the account's root principal `kms:*`). A key
whose policy does not delegate to IAM fails the first archive upload, after the GPU build, not at synth.
DescribeKey and GetKeyPolicy only read.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

from triton_mme.core.bounded import load_json
from triton_mme.core.limits import MAX_REPLY_BYTES
from triton_mme_cdk.preflight.checks import CheckResult, reports_aws_errors

NAME = "kms-key"
# What the stack's roles do with the key: SSE-KMS reads (Decrypt) and writes (GenerateDataKey).
ROLE_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
KEY_POLICY_NAME = "default"  # the only policy name KMS keys have (GetKeyPolicy)


def _listed(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _allows(patterns: Iterable[str], action: str) -> bool:
    return any(fnmatch.fnmatchcase(action.lower(), pattern.lower()) for pattern in patterns)


def _account_principals(account: str, partition: str) -> set[str]:
    return {account, f"arn:{partition}:iam::{account}:root"}


def undelegated_actions(policy: dict[str, Any], account: str, partition: str = "aws") -> list[str]:
    """ROLE_ACTIONS the policy does not allow, without a condition, to the account (so to IAM policies)."""
    principals = _account_principals(account, partition)
    allowed: set[str] = set()
    statements = policy.get("Statement", [])
    for statement in [statements] if isinstance(statements, dict) else statements:
        if statement.get("Effect") != "Allow" or statement.get("Condition"):
            continue
        principal = statement.get("Principal", {})
        aws = _listed(principal.get("AWS")) if isinstance(principal, dict) else _listed(principal)
        if not principals & set(aws) or "*" not in _listed(statement.get("Resource")):
            continue
        allowed |= {action for action in ROLE_ACTIONS if _allows(_listed(statement.get("Action")), action)}
    return [action for action in ROLE_ACTIONS if action not in allowed]


@reports_aws_errors(NAME)
def check_kms_key(kms: Any, key_arn: str) -> CheckResult:
    """The key must be an enabled symmetric encryption key whose policy lets IAM grant its use."""
    partition, account = key_arn.split(":")[1], key_arn.split(":")[4]
    metadata = kms.describe_key(KeyId=key_arn)["KeyMetadata"]
    state, usage, spec = metadata.get("KeyState"), metadata.get("KeyUsage"), metadata.get("KeySpec")
    if state != "Enabled" or usage != "ENCRYPT_DECRYPT" or spec != "SYMMETRIC_DEFAULT":
        return CheckResult(
            NAME,
            False,
            f"{key_arn} is {state}, {usage}, {spec}; S3 SSE-KMS needs an Enabled, ENCRYPT_DECRYPT, "
            "SYMMETRIC_DEFAULT key",
            "enable the key, or set kmsKeyArn to a symmetric encryption key",
        )
    policy = load_json(
        kms.get_key_policy(KeyId=key_arn, PolicyName=KEY_POLICY_NAME)["Policy"],
        where=f"{key_arn} key policy",
        max_bytes=MAX_REPLY_BYTES,
    )
    missing = undelegated_actions(policy, account, partition)
    if missing:
        root = f"arn:{partition}:iam::{account}:root"
        return CheckResult(
            NAME,
            False,
            f"the key policy of {key_arn} does not let IAM policies grant {', '.join(missing)} (no "
            f"unconditional Allow of them to {root}): the stack's roles could not read or write the bucket",
            f'add the default key policy statement ("Enable IAM User Permissions": Allow kms:* to {root} '
            'on "*")',
        )
    granted = ", ".join(ROLE_ACTIONS)
    return CheckResult(NAME, True, f"{key_arn} is enabled and its policy lets IAM grant {granted}")

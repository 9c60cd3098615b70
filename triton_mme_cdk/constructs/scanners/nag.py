"""Acknowledging cdk-nag findings precisely: one acknowledgment per wildcard resource, with its reason."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Acknowledgment, ArnFormat, Stack, Validations
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from constructs import IConstruct


def acknowledge_wildcard_resources(scope: IConstruct, resources: list[str], reason: str) -> None:
    """Acknowledge AwsSolutions-IAM5 for exactly these resources (as cdk-nag prints them), nothing broader."""
    stack = Stack.of(scope)
    for resource in resources:
        finding = _as_nag_text(stack.resolve(resource))
        Validations.of(scope).acknowledge(
            Acknowledgment(id=f"AwsSolutions-IAM5[Resource::{finding}]", reason=reason)
        )


def acknowledge_codebuild_grants(
    policy: iam.Policy, project: codebuild.Project, *, encrypted: bool, image_reason: str
) -> None:
    """The grants CodeBuild adds to every project's role (its default log group's streams, ECR's token, a
    read of its source asset, and with `encrypted` its use of the project's key), the missing key without
    `encrypted` (AwsSolutions-CB4), and the non-managed build image (AwsSolutions-CB5) for `image_reason`."""
    default_logs = Stack.of(project).format_arn(
        service="logs",
        resource="log-group",
        resource_name=f"/aws/codebuild/{project.project_name}:*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    acknowledge_wildcard_resources(
        policy,
        [default_logs, "*"],
        reason="CodeBuild's own grants: its default log group's streams, and ecr:GetAuthorizationToken "
        "(no resource-level permissions) to pull the build image.",
    )
    for action in ("s3:GetBucket*", "s3:GetObject*", "s3:List*"):
        Validations.of(policy).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Action::{action}]",
                reason="CodeBuild's read-only grant on its source: one asset object and its bucket.",
            )
        )
    if encrypted:
        for action in ("kms:GenerateDataKey*", "kms:ReEncrypt*"):
            Validations.of(policy).acknowledge(
                Acknowledgment(
                    id=f"AwsSolutions-IAM5[Action::{action}]",
                    reason="CodeBuild's encrypt/decrypt grant on the one key given to the project.",
                )
            )
    else:
        Validations.of(project).acknowledge(
            Acknowledgment(
                id="AwsSolutions-CB4",
                reason="No key given: the project keeps no artifacts, its output is the store.",
            )
        )
    Validations.of(project).acknowledge(Acknowledgment(id="AwsSolutions-CB5", reason=image_reason))


def _as_nag_text(value: Any) -> str:
    """cdk-nag's rendering of a resolved value: `<LogicalId.Attr>` for GetAtt, `<Name>` for Ref, compact JSON
    for any other function (Fn::Select of an Fn::Split, as CDK's grants cut an ARN)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return f"<{argument}>"
        if function == "Fn::GetAtt":
            return f"<{'.'.join(argument)}>"
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(_as_nag_text(part) for part in parts)
        if function.startswith("Fn::"):
            return json.dumps(value, separators=(",", ":"))
    raise ValueError(f"cannot render {value!r} as a cdk-nag finding")

"""Acknowledging cdk-nag findings precisely: one acknowledgment per wildcard resource, with its reason."""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct


def acknowledge_wildcard_resources(scope: IConstruct, resources: list[str], reason: str) -> None:
    """Acknowledge AwsSolutions-IAM5 for exactly these resources (as cdk-nag prints them), nothing broader."""
    stack = Stack.of(scope)
    for resource in resources:
        finding = _as_nag_text(stack.resolve(resource))
        Validations.of(scope).acknowledge(
            Acknowledgment(id=f"AwsSolutions-IAM5[Resource::{finding}]", reason=reason)
        )


def _as_nag_text(value: Any) -> str:
    """cdk-nag's rendering of a resolved value: `<LogicalId.Attr>` for GetAtt, `<Name>` for Ref."""
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
    raise ValueError(f"cannot render {value!r} as a cdk-nag finding")

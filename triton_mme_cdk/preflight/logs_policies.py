"""The account's CloudWatch Logs resource policies: the stack adds account-level ones (its deployment events'
log group, triton_mme_cdk/constructs/endpoint/deployment_events.py), and an account and region hold at most
logs_resource_policy_limit of them (core.platform, with its source). Past the limit the deployment fails
half way, on the policy's creation, after the GPU build has already run."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.preflight.checks import CheckResult, reports_aws_errors

NAME = "logs-resource-policies"
RESOURCE_POLICY_TYPE = "AWS::Logs::ResourcePolicy"
ACCOUNT_SCOPE = "ACCOUNT"


def _account_policies(logs: Any) -> set[str]:
    pages = logs.get_paginator("describe_resource_policies").paginate(policyScope=ACCOUNT_SCOPE)
    return {policy["policyName"] for page in pages for policy in page.get("resourcePolicies", [])}


def _stack_policies(cloudformation: Any, stack_name: str) -> set[str]:
    """The names of the resource policies the deployed stack already owns (none before its first deploy)."""
    try:
        pages = list(cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name))
    except ClientError as error:
        if "does not exist" in str(error.response.get("Error", {}).get("Message", "")):
            return set()
        raise
    return {
        resource["PhysicalResourceId"]
        for page in pages
        for resource in page.get("StackResourceSummaries", [])
        if resource["ResourceType"] == RESOURCE_POLICY_TYPE and resource.get("PhysicalResourceId")
    }


@reports_aws_errors(NAME)
def check_logs_resource_policies(
    *,
    logs: Any,
    cloudformation: Any,
    stack_name: str,
    stack_defines: int,
    region: str,
    limit: int = PLATFORM.limits.logs_resource_policy_limit.value,
) -> CheckResult:
    """The account's policies plus the ones the stack would add (`stack_defines` less those it already has)
    must stay within `limit`."""
    existing = _account_policies(logs)
    adds = max(0, stack_defines - len(_stack_policies(cloudformation, stack_name) & existing))
    after = len(existing) + adds
    seen = f"{len(existing)} of {limit} account-level CloudWatch Logs resource policies in {region}"
    if after > limit:
        return CheckResult(
            NAME,
            False,
            f"{seen}; the stack adds {adds}, {after - limit} past the limit",
            "delete account-level resource policies no longer in use (`aws logs describe-resource-policies`, "
            "`aws logs delete-resource-policy --policy-name NAME`); the limit is per account and region",
        )
    room = " (the last free one)" if after == limit and adds else ""
    return CheckResult(NAME, True, f"{seen}; the stack adds {adds}{room}")

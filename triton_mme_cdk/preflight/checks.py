"""The preflight checks: small functions of boto3 clients and plain values, each returning one result.

Every call here only reads. An AWS error (missing permission, throttling) becomes a failed check that says
which call was refused, never a traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from triton_mme.core.errors import describe_aws_error
from triton_mme.core.platform import (
    PLATFORM,
    Quota,
)

P = ParamSpec("P")
# CloudFormation states in which a stack is usable (a failed or rolled-back creation is not).
USABLE_STACK_STATES = frozenset(
    {"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE"}
)


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def line(self) -> str:
        if self.ok:
            return f"PASS {self.name}: {self.detail}"
        return f"FAIL {self.name}: {self.detail}; fix: {self.fix}"


def reports_aws_errors(name: str) -> Callable[[Callable[P, CheckResult]], Callable[P, CheckResult]]:
    """Turn an AWS error inside a check into a failed result naming the refused call."""

    def decorate(check: Callable[P, CheckResult]) -> Callable[P, CheckResult]:
        @functools.wraps(check)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> CheckResult:
            try:
                return check(*args, **kwargs)
            except ClientError as error:
                return CheckResult(
                    name,
                    False,
                    f"AWS {error.operation_name} answered {describe_aws_error(error)}",
                    f"let the credentials running preflight call {error.operation_name} "
                    "(docs/first-deploy.md lists the read-only permissions)",
                )
            except NoCredentialsError:
                raise  # one line for the whole run, not one per check
            except BotoCoreError as error:
                return CheckResult(
                    name, False, f"AWS: {describe_aws_error(error)}", "check the AWS credentials and region"
                )

        return guarded

    return decorate


def check_region(region: str, problem: str | None, allowed: list[str]) -> CheckResult:
    """The deploy region must have the Triton image, the build image's registry and CodeBuild GPU runners."""
    if problem is None:
        return CheckResult("region", True, f"{region} has the Triton image, the build image and GPU runners")
    return CheckResult("region", False, problem, "deploy to one of: " + ", ".join(allowed))


# What GetServiceQuota and GetAWSDefaultServiceQuota answer for a code they do not hold.
NO_SUCH_QUOTA = "NoSuchResourceException"


@dataclass(frozen=True)
class QuotaValue:
    name: str  # as Service Quotas spells it
    value: float
    shown: str  # the name, and the code it was found by


def _quota_value(client: Any, quota: Quota) -> QuotaValue | None:
    """The quota's applied value, else its default: by its code, or by its name (any case) where the code is
    not known; None when the region has no such quota."""
    if quota.code is not None:
        for operation in ("get_service_quota", "get_aws_default_service_quota"):
            try:
                found = getattr(client, operation)(ServiceCode=quota.service_code, QuotaCode=quota.code)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") == NO_SUCH_QUOTA:
                    continue
                raise
            name = found["Quota"].get("QuotaName") or quota.name
            return QuotaValue(name, float(found["Quota"]["Value"]), f"'{name}' ({quota.code})")
        return None
    for operation in ("list_service_quotas", "list_aws_default_service_quotas"):
        for page in client.get_paginator(operation).paginate(ServiceCode=quota.service_code):
            for entry in page.get("Quotas", []):
                if entry["QuotaName"].lower() == quota.name.lower():
                    name = entry["QuotaName"]
                    return QuotaValue(name, float(entry["Value"]), f"'{name}' ({entry['QuotaCode']})")
    return None


def _missing(quota: Quota) -> str:
    looked_up = f"code {quota.code}, '{quota.name}'" if quota.code else f"named '{quota.name}'"
    return f"no {quota.service_code} quota {looked_up} in this region"


@reports_aws_errors("endpoint-quota")
def check_endpoint_quota(service_quotas: Any, quota: Quota, needed: int, why: str) -> CheckResult:
    """The per-type endpoint instance quota must allow the most instances the endpoints of that type can run
    at once: `needed`, explained by `why` (autoscaling's maximum, the second fleet of an update, and the
    component endpoint's instances where the catalog has dedicated entries)."""
    found = _quota_value(service_quotas, quota)
    if found is None:
        return CheckResult(
            "endpoint-quota", False, _missing(quota), "choose an instanceType SageMaker offers in this region"
        )
    if found.value < needed:
        return CheckResult(
            "endpoint-quota",
            False,
            f"{found.shown} is {found.value:g}, below the {needed} instances the endpoints can run at once "
            f"({why})",
            f"request at least {needed} in Service Quotas (Amazon SageMaker, '{found.name}'), or lower "
            "maxInstanceCount (docs/updates.md: the strategies and the instances they add)",
        )
    return CheckResult("endpoint-quota", True, f"{found.shown} is {found.value:g} (needs {needed}: {why})")


@reports_aws_errors("codebuild-gpu-quota")
def check_codebuild_gpu_quota(service_quotas: Any, quota: Quota, needed: int = 1) -> CheckResult:
    """The account must be allowed `needed` running builds of the runner's GPU size at once (buildRunners)."""
    found = _quota_value(service_quotas, quota)
    if found is None:
        return CheckResult(
            "codebuild-gpu-quota",
            False,
            _missing(quota),
            "deploy to a region with CodeBuild GPU runners (docs/platform.md)",
        )
    if found.value < 1:
        return CheckResult(
            "codebuild-gpu-quota",
            False,
            f"{found.shown} is {found.value:g}: no GPU build can start",
            f"request at least {needed} in Service Quotas (AWS CodeBuild, '{found.name}')",
        )
    if found.value < needed:
        return CheckResult(
            "codebuild-gpu-quota",
            False,
            f"{found.shown} is {found.value:g}, below buildRunners={needed}: the shards beyond it would wait "
            "and the stages run out of time",
            f"request at least {needed} in Service Quotas (AWS CodeBuild, '{found.name}'), or lower "
            "buildRunners",
        )
    return CheckResult("codebuild-gpu-quota", True, f"{found.shown} is {found.value:g} (needs {needed})")


def check_image(ecr: Any, name: str, *, region: str, registry: str, repository: str, tag: str) -> CheckResult:
    """The image tag must exist in the region's registry (reads its manifest only)."""

    @reports_aws_errors(name)
    def _check() -> CheckResult:
        uri = f"{registry}.dkr.ecr.{region}/{repository}:{tag}"
        response = ecr.batch_get_image(
            registryId=registry, repositoryName=repository, imageIds=[{"imageTag": tag}]
        )
        if response.get("images"):
            return CheckResult(name, True, f"{uri} exists")
        failures = response.get("failures") or [{}]
        reason = failures[0].get("failureCode", "not found")
        return CheckResult(
            name, False, f"{uri} is not there ({reason})", "choose a tag and region from docs/platform.md"
        )

    return _check()


@reports_aws_errors("cdk-bootstrap")
def check_bootstrap(
    cloudformation: Any, minimum: int = PLATFORM.limits.cdk_min_bootstrap_version.value
) -> CheckResult:
    """The CDK bootstrap stack must exist, be usable and be at least the version the templates require."""
    fix = "run `npx cdk bootstrap aws://<account>/<region>` with this project's CDK"
    try:
        stacks = cloudformation.describe_stacks(StackName=PLATFORM.limits.cdk_bootstrap_stack.value)["Stacks"]
    except ClientError as error:
        if "does not exist" not in str(error.response.get("Error", {}).get("Message", "")):
            raise
        return CheckResult(
            "cdk-bootstrap",
            False,
            f"no {PLATFORM.limits.cdk_bootstrap_stack.value} stack in this region",
            fix,
        )
    stack = stacks[0]
    if stack["StackStatus"] not in USABLE_STACK_STATES:
        return CheckResult(
            "cdk-bootstrap",
            False,
            f"{PLATFORM.limits.cdk_bootstrap_stack.value} is {stack['StackStatus']}",
            f"repair it, then {fix}",
        )
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}
    version = int(outputs.get("BootstrapVersion", "0"))
    if version < minimum:
        return CheckResult(
            "cdk-bootstrap", False, f"bootstrap version {version} is older than the required {minimum}", fix
        )
    return CheckResult(
        "cdk-bootstrap", True, f"{PLATFORM.limits.cdk_bootstrap_stack.value} version {version} (>= {minimum})"
    )

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
from triton_mme.core.platform import CDK_BOOTSTRAP_STACK, CDK_MIN_BOOTSTRAP_VERSION

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


def _quota_value(client: Any, service_code: str, matches: Callable[[str], bool]) -> tuple[str, float] | None:
    """(name, value) of the first quota whose name matches: the applied value, else the default."""
    for operation in ("list_service_quotas", "list_aws_default_service_quotas"):
        for page in client.get_paginator(operation).paginate(ServiceCode=service_code):
            for quota in page.get("Quotas", []):
                if matches(quota["QuotaName"]):
                    return quota["QuotaName"], float(quota["Value"])
    return None


@reports_aws_errors("endpoint-quota")
def check_endpoint_quota(service_quotas: Any, quota_name: str, needed: int, why: str) -> CheckResult:
    """The per-type endpoint instance quota must allow the most instances the endpoint can run at once:
    `needed`, explained by `why` (autoscaling's maximum, and the second fleet of an update)."""
    found = _quota_value(service_quotas, "sagemaker", lambda name: name == quota_name)
    if found is None:
        return CheckResult(
            "endpoint-quota",
            False,
            f"no SageMaker quota named '{quota_name}' in this region",
            "choose an instanceType SageMaker offers in this region",
        )
    value = found[1]
    if value < needed:
        return CheckResult(
            "endpoint-quota",
            False,
            f"'{quota_name}' is {value:g}, below the {needed} instances the endpoint can run at once ({why})",
            f"request at least {needed} in Service Quotas (Amazon SageMaker, '{quota_name}'), or lower "
            "maxInstanceCount (docs/updates.md: the strategies and the instances they add)",
        )
    return CheckResult("endpoint-quota", True, f"'{quota_name}' is {value:g} (needs {needed}: {why})")


@reports_aws_errors("codebuild-gpu-quota")
def check_codebuild_gpu_quota(service_quotas: Any, quota_name: str, needed: int = 1) -> CheckResult:
    """The account must be allowed `needed` running builds of the runner's GPU size at once (buildRunners)."""
    found = _quota_value(service_quotas, "codebuild", lambda name: name.lower() == quota_name.lower())
    if found is None:
        return CheckResult(
            "codebuild-gpu-quota",
            False,
            f"no CodeBuild quota named '{quota_name}' in this region",
            "deploy to a region with CodeBuild GPU runners (docs/platform.md)",
        )
    name, value = found
    if value < 1:
        return CheckResult(
            "codebuild-gpu-quota",
            False,
            f"'{name}' is {value:g}: no GPU build can start",
            f"request at least {needed} in Service Quotas (AWS CodeBuild, '{name}')",
        )
    if value < needed:
        return CheckResult(
            "codebuild-gpu-quota",
            False,
            f"'{name}' is {value:g}, below buildRunners={needed}: the shards beyond it would wait and the "
            "stages run out of time",
            f"request at least {needed} in Service Quotas (AWS CodeBuild, '{name}'), or lower buildRunners",
        )
    return CheckResult("codebuild-gpu-quota", True, f"'{name}' is {value:g} (needs {needed})")


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
def check_bootstrap(cloudformation: Any, minimum: int = CDK_MIN_BOOTSTRAP_VERSION) -> CheckResult:
    """The CDK bootstrap stack must exist, be usable and be at least the version the templates require."""
    fix = "run `npx cdk bootstrap aws://<account>/<region>` with this project's CDK"
    try:
        stacks = cloudformation.describe_stacks(StackName=CDK_BOOTSTRAP_STACK)["Stacks"]
    except ClientError as error:
        if "does not exist" not in str(error.response.get("Error", {}).get("Message", "")):
            raise
        return CheckResult("cdk-bootstrap", False, f"no {CDK_BOOTSTRAP_STACK} stack in this region", fix)
    stack = stacks[0]
    if stack["StackStatus"] not in USABLE_STACK_STATES:
        return CheckResult(
            "cdk-bootstrap",
            False,
            f"{CDK_BOOTSTRAP_STACK} is {stack['StackStatus']}",
            f"repair it, then {fix}",
        )
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}
    version = int(outputs.get("BootstrapVersion", "0"))
    if version < minimum:
        return CheckResult(
            "cdk-bootstrap", False, f"bootstrap version {version} is older than the required {minimum}", fix
        )
    return CheckResult("cdk-bootstrap", True, f"{CDK_BOOTSTRAP_STACK} version {version} (>= {minimum})")

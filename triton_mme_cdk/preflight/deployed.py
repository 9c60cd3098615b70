"""Checks against the deployed stack: changes SageMaker refuses, or does not guard, in one `cdk deploy`."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from triton_mme_cdk.preflight.checks import CheckResult, reports_aws_errors

SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"


def _deployed_endpoint(cloudformation: Any, stack_name: str, output_key: str) -> str | None:
    """The endpoint name the deployed stack reports, or None before the first deployment."""
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as error:
        if "does not exist" in str(error.response.get("Error", {}).get("Message", "")):
            return None
        raise
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stacks[0].get("Outputs", [])}
    return outputs.get(output_key)


def _deployed_variants(
    cloudformation: Any, sagemaker: Any, stack_name: str, output_key: str
) -> tuple[str, list[dict[str, Any]]] | None:
    """The deployed endpoint's name and the production variants of the config it serves."""
    endpoint = _deployed_endpoint(cloudformation, stack_name, output_key)
    if endpoint is None:
        return None
    config_name = sagemaker.describe_endpoint(EndpointName=endpoint)["EndpointConfigName"]
    variants = sagemaker.describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"]
    return endpoint, list(variants)


@reports_aws_errors("variant-name")
def check_variant_name(
    *, cloudformation: Any, sagemaker: Any, stack_name: str, endpoint_output: str, variant_name: str
) -> CheckResult:
    """A guarded update needs the new endpoint config to keep the variant name of the one it replaces
    (SageMaker developer guide, deployment-guardrails-exclusions)."""
    name = "variant-name"
    deployed = _deployed_variants(cloudformation, sagemaker, stack_name, endpoint_output)
    if deployed is None:
        return CheckResult(name, True, f"no deployed endpoint in stack {stack_name} yet")
    endpoint, variants = deployed
    names = [variant["VariantName"] for variant in variants]
    if names == [variant_name]:
        return CheckResult(name, True, f"{endpoint} serves variant {variant_name}, which the update keeps")
    return CheckResult(
        name,
        False,
        f"{endpoint} serves variants {', '.join(names)}; the update's config has only {variant_name}, and "
        "SageMaker guards an update only when the variant name stays the same",
        "update this endpoint outside the stack first, or deploy the stack under a new stackName",
    )


@reports_aws_errors("instance-type-change")
def check_instance_type_change(
    *,
    cloudformation: Any,
    sagemaker: Any,
    autoscaling: Any,
    stack_name: str,
    endpoint_output: str,
    variant_name: str,
    instance_type: str,
) -> CheckResult:
    """SageMaker refuses to change the instance type of a variant that is a registered scalable target
    (AWS: "Update endpoints that use auto scaling"), so such a deployment would fail after the model build.
    The fix is two deployments: the first removes the scaling, the second changes the type and adds it back.
    """
    name = "instance-type-change"
    found = _deployed_variants(cloudformation, sagemaker, stack_name, endpoint_output)
    if found is None:
        return CheckResult(name, True, f"no deployed endpoint in stack {stack_name} yet")
    endpoint, variants = found
    deployed = next((v.get("InstanceType") for v in variants if v["VariantName"] == variant_name), None)
    if deployed is None or deployed == instance_type:
        return CheckResult(name, True, f"{endpoint} keeps instanceType={instance_type}")
    targets = autoscaling.describe_scalable_targets(
        ServiceNamespace="sagemaker",
        ResourceIds=[f"endpoint/{endpoint}/variant/{variant_name}"],
        ScalableDimension=SCALABLE_DIMENSION,
    )["ScalableTargets"]
    if not targets:
        return CheckResult(
            name, True, f"{endpoint} moves from {deployed} to {instance_type}; it is not autoscaled"
        )
    return CheckResult(
        name,
        False,
        f"{endpoint} would move from {deployed} to {instance_type} while its variant is registered for "
        "autoscaling, which SageMaker refuses",
        f'deploy twice: first `make deploy CONTEXT="-c autoscaling=false -c instanceType={deployed}"` '
        "(removes the scaling, keeps the type), then "
        f'`make deploy CONTEXT="-c instanceType={instance_type}"` (changes the type, scales again)',
    )

"""Check 2: DescribeEndpoint, DescribeEndpointConfig and DescribeModel against the stack's settings."""

from __future__ import annotations

from acceptance_support import (
    OLD_CONFIG,
    deployed,
    deployment_config,
    describe_endpoint_response,
    expect_describe,
    stubbed,
)

from triton_mme.acceptance.live import describe_live
from triton_mme.acceptance.report import Check
from triton_mme.acceptance.template import check_template, describe_deployment


def checks(**changes: object) -> dict[str, Check]:
    sagemaker, stubber = stubbed("sagemaker")
    endpoint = changes.pop("endpoint", None)
    expect_describe(stubber, endpoint=endpoint, **changes)  # type: ignore[arg-type]
    live = describe_live(sagemaker, "TritonMultiModelEndpoint", "AllTraffic")
    stubber.assert_no_pending_responses()
    return {check.name: check for check in check_template(deployed(), live)}


def test_an_endpoint_as_deployed_passes_every_check() -> None:
    found = checks()
    assert set(found) == {
        "endpoint-status",
        "endpoint-config",
        "deployment-config",
        "variant-name",
        "instance-type",
        "instance-count",
        "inference-ami",
        "model",
        "image",
        "image-tag",
        "mode",
        "data-prefix",
        "network-isolation",
    }
    assert all(check.passed for check in found.values()), [c.line() for c in found.values() if not c.passed]


def test_a_changed_instance_type_and_ami_fail_with_both_values() -> None:
    found = checks(InstanceType="ml.g4dn.xlarge", InferenceAmiVersion="al2-ami-sagemaker-inference-gpu-2")
    assert not found["instance-type"].passed
    assert (found["instance-type"].expected, found["instance-type"].seen) == (
        "ml.g5.xlarge",
        "ml.g4dn.xlarge",
    )
    assert not found["inference-ami"].passed
    assert "CloudTrail" in (found["instance-type"].fix or "")
    assert found["image"].passed


def test_an_endpoint_rolled_back_to_the_old_config_fails() -> None:
    found = checks(endpoint=describe_endpoint_response(EndpointConfigName=OLD_CONFIG))
    check = found["endpoint-config"]
    assert not check.passed and check.seen == OLD_CONFIG
    assert "rolled the last update back" in (check.fix or "")


def test_a_deployment_config_that_is_not_the_stacks_fails() -> None:
    found = checks(endpoint=describe_endpoint_response(LastDeploymentConfig=None))
    check = found["deployment-config"]
    assert not check.passed
    assert check.expected.startswith("CANARY, step 1 instance(s), bake 600 s, rollback on ")
    assert check.seen == "ALL_AT_ONCE, no rollback alarms"


def test_deployments_are_described_in_one_comparable_phrase() -> None:
    from triton_mme.acceptance.stack import DeployedSettings

    settings = deployed(deploymentConfig=deployment_config("LINEAR", bake_s=300))
    assert isinstance(settings, DeployedSettings) and settings.strategy == "LINEAR"
    linear = describe_deployment(settings.api_deployment_config)
    assert linear.startswith("LINEAR, step 50%, bake 300 s, rollback on ")

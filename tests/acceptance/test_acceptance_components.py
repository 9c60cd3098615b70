"""The first-deploy verdicts on the inference component endpoint: each read from stubbed DescribeEndpoint,
DescribeEndpointConfig, DescribeInferenceComponent, ListMetrics and InvokeEndpoint answers."""

from __future__ import annotations

import pytest
from acceptance_support import (
    DEPLOYED_COMPONENTS,
    expect_component,
    expect_component_endpoint,
    expect_component_endpoint_config,
    stubbed,
    verdict,
)
from botocore.stub import Stubber

from triton_mme.acceptance.verdicts import (
    check_component_endpoint_update,
    check_component_metrics,
    check_components_run,
    check_no_capacity_error,
)
from triton_mme.core.platform import PLATFORM


def expect_components(stub: Stubber, states: dict[str, str]) -> None:
    for component in DEPLOYED_COMPONENTS.components.values():
        expect_component(stub, component.name, states[component.name])


def test_components_in_service_pass_family_and_setup() -> None:
    sagemaker, stub = stubbed("sagemaker")
    expect_component_endpoint(stub)
    expect_component_endpoint_config(stub)
    expect_components(stub, {"team-ic-resnet50": "InService", "team-ic-mobilenet": "InService"})
    checks = check_components_run(sagemaker, DEPLOYED_COMPONENTS)
    stub.assert_no_pending_responses()
    assert [(c.name, verdict(c)) for c in checks] == [
        ("component-family", "PASS"),
        ("component-ami-scaling", "PASS"),
    ]
    assert "al2023-ami-sagemaker-inference-gpu-4-1" in checks[1].seen and "ENABLED" in checks[1].seen


def test_a_failed_component_fails_both_and_names_it() -> None:
    sagemaker, stub = stubbed("sagemaker")
    expect_component_endpoint(stub)
    expect_component_endpoint_config(stub)
    expect_components(stub, {"team-ic-resnet50": "Failed", "team-ic-mobilenet": "InService"})
    checks = check_components_run(sagemaker, DEPLOYED_COMPONENTS)
    assert [verdict(c) for c in checks] == ["FAIL", "FAIL"]
    assert "team-ic-resnet50 Failed" in checks[0].seen and "FailureReason" in checks[0].fix


def test_the_rollback_metric_missing_for_one_component_cannot_tell_and_names_it() -> None:
    cloudwatch, stub = stubbed("cloudwatch")
    listed = {"Metrics": [{"Namespace": "AWS/SageMaker", "MetricName": "Invocation5XXErrors"}]}
    stub.add_response("list_metrics", {"Metrics": []})
    stub.add_response("list_metrics", listed)
    check = check_component_metrics(cloudwatch, DEPLOYED_COMPONENTS)
    assert verdict(check) == "CANNOT TELL"
    assert "team-ic-resnet50" in check.seen and "team-ic-mobilenet" not in check.seen


@pytest.mark.parametrize(
    ("status", "updated", "expected"),
    [
        ("InService", False, "CANNOT TELL"),
        ("InService", True, "PASS"),
        ("Failed", True, "FAIL"),
    ],
)
def test_the_component_endpoint_update(status: str, updated: bool, expected: str) -> None:
    sagemaker, stub = stubbed("sagemaker")
    expect_component_endpoint(stub, status, updated=updated)
    assert verdict(check_component_endpoint_update(sagemaker, DEPLOYED_COMPONENTS)) == expected


def test_a_component_at_zero_copies_answers_the_recorded_no_capacity_error() -> None:
    sagemaker, stub = stubbed("sagemaker")
    runtime, runtime_stub = stubbed("sagemaker-runtime")
    expect_component(stub, "team-ic-resnet50", copies=0)
    runtime_stub.add_client_error(
        "invoke_endpoint",
        service_error_code=PLATFORM.components.no_capacity_error.code,
        service_message=PLATFORM.components.no_capacity_error.message,
        http_status_code=400,
    )
    check = check_no_capacity_error(sagemaker, runtime, DEPLOYED_COMPONENTS)
    assert verdict(check) == "PASS" and "team-ic-resnet50" in check.seen


def test_another_answer_at_zero_copies_fails_and_quotes_it() -> None:
    sagemaker, stub = stubbed("sagemaker")
    runtime, runtime_stub = stubbed("sagemaker-runtime")
    expect_component(stub, "team-ic-resnet50", copies=0)
    runtime_stub.add_client_error(
        "invoke_endpoint",
        service_error_code="ModelError",
        service_message="something else",
        http_status_code=424,
    )
    check = check_no_capacity_error(sagemaker, runtime, DEPLOYED_COMPONENTS)
    assert verdict(check) == "FAIL" and "ModelError something else" in check.seen


def test_no_component_at_zero_copies_cannot_tell() -> None:
    sagemaker, stub = stubbed("sagemaker")
    runtime, _ = stubbed("sagemaker-runtime")
    expect_component(stub, "team-ic-resnet50", copies=1)
    expect_component(stub, "team-ic-mobilenet", copies=2)
    check = check_no_capacity_error(sagemaker, runtime, DEPLOYED_COMPONENTS)
    assert verdict(check) == "CANNOT TELL" and "no component is at zero copies" in check.seen

"""The Triton endpoint in a bare stack: Model, endpoint config and endpoint, with their driver and network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Annotations, Match, Template
from synth_support import KEY_ARN, bare_stack, checkov_skips, template_logical_id

from triton_mme.core.triton_container import PING_MODE_VARIABLE, serve_flags, server_ping_mode
from triton_mme.local_triton.server import TritonServer
from triton_mme_cdk.constructs.endpoint.deployment_policy import deployment_config
from triton_mme_cdk.constructs.endpoint.triton_endpoint import TritonEndpoint
from triton_mme_cdk.constructs.endpoint.triton_image import TritonImage
from triton_mme_cdk.constructs.store.model_store import ModelStore
from triton_mme_cdk.settings import SettingsError, UpdatePolicy
from triton_mme_cdk.settings.deployment_rules import CapacitySize, Strategy

ENDPOINT_NAME = "test-endpoint"

AMI = "al2023-ami-sagemaker-inference-gpu-4-1"


def endpoint_stack(**overrides: Any) -> tuple[Template, TritonEndpoint]:
    stack = bare_stack()
    key = kms.Key.from_key_arn(stack, "Key", KEY_ARN) if overrides.pop("with_key", False) else None
    props: dict[str, Any] = {
        "instance_type": "ml.g5.xlarge",
        "initial_instance_count": 2,
        "inference_ami_version": AMI,
        **overrides,
    }
    endpoint = TritonEndpoint(
        stack,
        "Triton",
        name=ENDPOINT_NAME,
        store=ModelStore(stack, "Store"),
        image=TritonImage(stack, "Image", tag="25.04-py3"),
        encryption_key=key,
        **props,
    )
    return Template.from_stack(stack), endpoint


@pytest.fixture(scope="module")
def default() -> tuple[Template, TritonEndpoint]:
    return endpoint_stack()


def test_model_is_an_unnamed_network_isolated_multi_model_triton_container(default: tuple) -> None:
    template, _ = default
    template.has_resource(
        "AWS::SageMaker::Model",
        {
            "Properties": {
                "EnableNetworkIsolation": True,
                "ExecutionRoleArn": {"Fn::GetAtt": [Match.string_like_regexp("^TritonHostingRole"), "Arn"]},
                "PrimaryContainer": {
                    "Mode": "MultiModel",
                    "Image": Match.any_value(),
                    "ModelDataUrl": {
                        "Fn::Join": [
                            "",
                            ["s3://", {"Ref": Match.string_like_regexp("^StoreBucket")}, "/models/"],
                        ]
                    },
                    "Environment": {"SAGEMAKER_TRITON_LOG_VERBOSE": "0"},
                },
            },
            # A Model created before its role's policy exists fails intermittently.
            "DependsOn": [Match.string_like_regexp("^TritonHostingPolicy")],
        },
    )


def test_the_local_triton_runs_with_the_models_container_environment(default: tuple, tmp_path: Path) -> None:
    template, _ = default
    ((_, model),) = template.find_resources("AWS::SageMaker::Model").items()
    environment = model["Properties"]["PrimaryContainer"]["Environment"]
    assert server_ping_mode(environment) == "live"  # set on the Model: the entry point's "live" is exported
    local = TritonServer(workdir=tmp_path)
    local_environment = local._environment()
    assert {k: local_environment[k] for k in environment} == environment
    assert local_environment[PING_MODE_VARIABLE] == server_ping_mode(environment)
    assert set(serve_flags(environment)) <= set(local.command(tmp_path / "bin"))


def test_network_isolation_can_be_turned_off() -> None:
    template, _ = endpoint_stack(network_isolation=False)
    template.has_resource_properties("AWS::SageMaker::Model", {"EnableNetworkIsolation": False})


@pytest.mark.parametrize("isolated", [True, False])
def test_checkov_skips_its_isolation_check_only_where_the_setting_turned_isolation_off(
    isolated: bool,
) -> None:
    template, endpoint = endpoint_stack(network_isolation=isolated)
    skips = checkov_skips(template, template_logical_id(endpoint.model))
    assert ("CKV_AWS_370" in skips) is not isolated


def test_config_has_one_unnamed_variant_on_the_given_type_count_and_inference_ami(default: tuple) -> None:
    template, _ = default
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "EndpointConfigName": Match.absent(),
            "KmsKeyId": Match.absent(),
            "ProductionVariants": [
                {
                    "VariantName": "AllTraffic",
                    "ModelName": {"Fn::GetAtt": [Match.string_like_regexp("^TritonModel"), "ModelName"]},
                    "InstanceType": "ml.g5.xlarge",
                    "InitialInstanceCount": 2,
                    "InitialVariantWeight": 1,
                    "InferenceAmiVersion": AMI,
                }
            ],
        },
    )


def test_without_an_inference_ami_the_variant_keeps_the_platform_default() -> None:
    template, _ = endpoint_stack(inference_ami_version=None)
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"ProductionVariants": [Match.object_like({"InferenceAmiVersion": Match.absent()})]},
    )


def test_endpoint_keeps_its_name_and_autoscaled_capacity_across_config_changes(default: tuple) -> None:
    template, endpoint = default
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "EndpointName": ENDPOINT_NAME,
            "EndpointConfigName": {
                "Fn::GetAtt": [Match.string_like_regexp("^TritonConfig"), "EndpointConfigName"]
            },
            "RetainAllVariantProperties": True,
        },
    )
    assert (endpoint.variant_name, endpoint.name) == ("AllTraffic", ENDPOINT_NAME)
    assert endpoint.endpoint.stack.resolve(endpoint.endpoint_name)["Fn::GetAtt"][1] == "EndpointName"


def test_volume_key_is_set_where_the_instance_type_accepts_one() -> None:
    template, endpoint = endpoint_stack(
        instance_type="ml.p3.2xlarge", with_key=True, encrypt_volume=True, inference_ami_version=None
    )
    template.has_resource_properties("AWS::SageMaker::EndpointConfig", {"KmsKeyId": KEY_ARN})
    assert not _warnings(endpoint)


def test_volume_key_is_left_off_with_a_warning_on_types_with_nvme_storage() -> None:
    template, endpoint = endpoint_stack(instance_type="ml.g5.2xlarge", with_key=True, encrypt_volume=False)
    template.has_resource_properties("AWS::SageMaker::EndpointConfig", {"KmsKeyId": Match.absent()})
    (warning,) = _warnings(endpoint)
    assert "ml.g5.2xlarge has local NVMe instance storage" in warning


def test_no_warning_without_a_key(default: tuple) -> None:
    assert not _warnings(default[1])


def _warnings(endpoint: TritonEndpoint) -> list[str]:
    messages = Annotations.from_stack(endpoint.endpoint.stack).find_warning(
        "*", Match.string_like_regexp("encryption key")
    )
    return [str(message.entry.data) for message in messages]


# ----- guarded updates: the DeploymentConfig of every strategy ---------------------------------------------

ALARMS = ["Errors5xx", "ModelLatencyP99High", "ModelLoadingWaitHigh"]
ROLLBACK = {"Alarms": [{"AlarmName": {"Ref": Match.string_like_regexp(f"^{name}")}} for name in ALARMS]}


def rollback_alarms(stack: cdk.Stack) -> list[cloudwatch.Alarm]:
    metric = cloudwatch.Metric(namespace="AWS/SageMaker", metric_name="Invocation5XXErrors")
    return [metric.create_alarm(stack, name, threshold=1, evaluation_periods=1) for name in ALARMS]


def guarded(policy: UpdatePolicy) -> tuple[Template, TritonEndpoint]:
    stack = bare_stack()
    endpoint = TritonEndpoint(
        stack,
        "Triton",
        name=ENDPOINT_NAME,
        store=ModelStore(stack, "Store"),
        image=TritonImage(stack, "Image", tag="25.04-py3"),
        instance_type="ml.g5.xlarge",
        initial_instance_count=2,
    )
    endpoint.guard_updates(policy, rollback_alarms=rollback_alarms(stack))
    return Template.from_stack(stack), endpoint


STEP_FIELDS = {
    Strategy.CANARY: "canary_size",
    Strategy.LINEAR: "linear_step_size",
    Strategy.ROLLING: "rolling_batch_size",
}


def policy(strategy: Strategy, step: str | None = None, **overrides: Any) -> UpdatePolicy:
    values = {
        "strategy": strategy,
        "wait_seconds": overrides.pop("wait", 600),
        "timeout_seconds": overrides.pop("timeout", 7200),
        **overrides,
    }
    if step:
        values[STEP_FIELDS[strategy]] = step
    return UpdatePolicy(**values)


def test_a_canary_update_shifts_one_step_then_the_rest_and_rolls_back_on_the_alarms() -> None:
    template, _ = guarded(policy(Strategy.CANARY, "1", termination_wait_seconds=120))
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": {
                "AutoRollbackConfiguration": ROLLBACK,
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": {
                        "Type": "CANARY",
                        "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
                        "WaitIntervalInSeconds": 600,
                    },
                    "TerminationWaitInSeconds": 120,
                    "MaximumExecutionTimeoutInSeconds": 7200,
                },
            },
            # Guardrails and the retained (autoscaled) instance count go together (docs/updates.md).
            "RetainAllVariantProperties": True,
        },
    )


def test_a_linear_update_takes_its_step_as_a_share_of_the_fleet() -> None:
    template, _ = guarded(policy(Strategy.LINEAR, "25%", wait=300, timeout=3600))
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": {
                "AutoRollbackConfiguration": ROLLBACK,
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": {
                        "Type": "LINEAR",
                        "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
                        "WaitIntervalInSeconds": 300,
                    },
                    "TerminationWaitInSeconds": 0,
                    "MaximumExecutionTimeoutInSeconds": 3600,
                },
            }
        },
    )


def test_an_all_at_once_update_still_bakes_and_rolls_back() -> None:
    template, _ = guarded(policy(Strategy.ALL_AT_ONCE))
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": {
                "AutoRollbackConfiguration": ROLLBACK,
                "BlueGreenUpdatePolicy": Match.object_like(
                    {"TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 600}}
                ),
                "RollingUpdatePolicy": Match.absent(),
            }
        },
    )


@pytest.mark.parametrize(
    ("rollback", "expected"), [(None, Match.absent()), ("50%", {"Type": "CAPACITY_PERCENT", "Value": 50})]
)
def test_a_rolling_update_replaces_batches_and_rolls_back_in_its_own_batches(
    rollback: str | None, expected: Any
) -> None:
    template, _ = guarded(policy(Strategy.ROLLING, "1", rollback_batch_size=rollback))
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {
            "DeploymentConfig": {
                "AutoRollbackConfiguration": ROLLBACK,
                "RollingUpdatePolicy": {
                    "MaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 1},
                    "WaitIntervalInSeconds": 600,
                    "MaximumExecutionTimeoutInSeconds": 7200,
                    "RollbackMaximumBatchSize": expected,
                },
                "BlueGreenUpdatePolicy": Match.absent(),
            }
        },
    )


def test_sagemaker_may_read_exactly_the_rollback_alarms_with_the_hosting_role() -> None:
    template, _ = guarded(policy(Strategy.CANARY, "1"))
    alarm_arns = [{"Fn::GetAtt": [Match.string_like_regexp(f"^{name}"), "Arn"]} for name in ALARMS]
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyName": Match.string_like_regexp("^TritonHostingPolicy"),
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [{"Action": "cloudwatch:DescribeAlarms", "Effect": "Allow", "Resource": alarm_arns}]
                )
            },
        },
    )


def test_without_guard_updates_the_endpoint_has_no_deployment_config(default: tuple) -> None:
    default[0].has_resource_properties("AWS::SageMaker::Endpoint", {"DeploymentConfig": Match.absent()})


def test_a_rolling_update_of_several_variants_is_refused() -> None:
    stack = bare_stack()
    endpoint = TritonEndpoint(
        stack,
        "Triton",
        name=ENDPOINT_NAME,
        store=ModelStore(stack, "Store"),
        image=TritonImage(stack, "Image", tag="25.04-py3"),
        instance_type="ml.g5.xlarge",
        initial_instance_count=2,
    )
    endpoint.variant_count = 2
    alarms = rollback_alarms(stack)
    with pytest.raises(ValueError, match="rolling updates exclude endpoints with several variants"):
        endpoint.guard_updates(policy(Strategy.ROLLING, "1"), rollback_alarms=alarms)
    # Blue/green has no such exclusion.
    endpoint.guard_updates(policy(Strategy.CANARY, "1"), rollback_alarms=alarms)


def test_the_step_exists_exactly_when_the_update_is_not_all_at_once() -> None:
    assert policy(Strategy.ALL_AT_ONCE).step is None
    assert UpdatePolicy(strategy=Strategy.ALL_AT_ONCE, canary_size="2").step is None
    assert policy(Strategy.CANARY).step == CapacitySize(1, False)
    assert policy(Strategy.LINEAR, "25%").step == CapacitySize(25, True)


def test_a_rollback_batch_outside_a_rolling_update_is_refused() -> None:
    with pytest.raises(
        SettingsError,
        match=r"^deploymentRollbackBatchSize=1 applies to rolling updates only; allowed: unset with "
        r"deploymentStrategy=canary$",
    ):
        policy(Strategy.CANARY, "1", rollback_batch_size="1")


@pytest.mark.parametrize("count", [0, 11])
def test_an_update_rolls_back_on_one_to_ten_alarms(count: int) -> None:
    with pytest.raises(ValueError, match=f"an update rolls back on 1..10 alarms, not {count}"):
        deployment_config(policy(Strategy.CANARY, "1"), [f"alarm-{i}" for i in range(count)])

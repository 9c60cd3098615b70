"""The whole app, synthesized as app.py composes it: wiring between constructs, settings reaching them, the
snapshot, cdk-nag and cfn-lint. Each construct's own behaviour is tested in its own file, in a bare stack."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import CfnElement
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Annotations, Match
from cfnlint.config import ConfigMixIn
from cfnlint.decode.decode import decode_str
from cfnlint.rules import Rules
from cfnlint.runner import Runner, run_template_by_data
from constructs import IConstruct
from dashboard_support import widget
from synth_support import (
    FEATURE_FLAGS,
    KEY_ARN,
    REPO_ROOT,
    VARIANTS,
    WITHOUT_TENSORRT,
    Synthesized,
    function_logging,
)
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension
from syrupy.types import PropertyPath

from benchmarks import checkov_scan
from benchmarks.deploy_order import dependencies, longest_waits, upstream
from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.settings import BUILD_DEADLINE_MARGIN_MINUTES

SynthWith = Callable[..., Synthesized]
ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def lid(synth: Synthesized, construct: IConstruct) -> str:
    """The logical id of a construct's CloudFormation resource (its default child for L2s)."""
    element = construct.node.default_child or construct
    assert isinstance(element, CfnElement)
    return str(synth.stack.resolve(synth.stack.get_logical_id(element)))


def only(synth: Synthesized, resource_type: str) -> tuple[str, dict[str, Any]]:
    ((logical_id, resource),) = synth.template.find_resources(resource_type).items()
    return logical_id, resource


def endpoint_name(synth: Synthesized) -> dict[str, Any]:
    return {"Fn::GetAtt": [lid(synth, synth.stack.mme.endpoint.endpoint), "EndpointName"]}


# ----- the build before the endpoint -----------------------------------------------------------------


def project(synth: Synthesized, construct: Any) -> dict[str, Any]:
    return dict(synth.resources[lid(synth, construct.project)]["Properties"])


def test_the_endpoint_waits_for_both_stages_which_wait_for_their_grants(default_synth: Synthesized) -> None:
    stack = default_synth.stack
    wait_id, _ = only(default_synth, "AWS::CloudFormation::WaitCondition")
    _, build = only(default_synth, "Custom::ModelBuild")
    model_id, _ = only(default_synth, "AWS::SageMaker::Model")
    _, endpoint = only(default_synth, "AWS::SageMaker::Endpoint")
    assert wait_id in endpoint["DependsOn"]
    # The run starts a build at once: both stages' grants (source read, store writes) must exist first.
    for stage in (stack.mme.build.runner, stack.mme.build.serving_check):
        assert lid(default_synth, stage.role_policy) in build["DependsOn"]
    # The build, then the serving check in the endpoint's image: the order the state machine runs them in.
    engine = stack.mme.build.state_machine.node.default_child
    definition = json.dumps(
        default_synth.resources[lid(default_synth, engine)]["Properties"]["DefinitionString"]
    )
    assert '\\"ModelBuild\\":{\\"Next\\":\\"ServingCheck\\"' in definition
    for stage, state in (
        (stack.mme.build.runner, "ModelBuild"),
        (stack.mme.build.serving_check, "ServingCheck"),
    ):
        after = definition.split(f'\\"{state}\\":{{', 1)[1]
        assert after.index(lid(default_synth, stage.project)) < after.index("EnvironmentVariablesOverride")
    # One fingerprint names the run: the build stages its candidate, the check publishes the build manifest
    # and the promotion reads it, all under the same one.
    assert build["Properties"]["Fingerprint"] == stack.mme.build.serving_check.fingerprint
    _, promotion = only(default_synth, "Custom::ManifestPromotion")
    assert promotion["Properties"]["Fingerprint"] == stack.mme.build.serving_check.fingerprint
    assert stack.mme.build.serving_check.fingerprint != stack.mme.build.runner.fingerprint
    _, config = only(default_synth, "AWS::SageMaker::EndpointConfig")
    assert config["Properties"]["ProductionVariants"][0]["ModelName"] == {
        "Fn::GetAtt": [model_id, "ModelName"]
    }
    bucket_ref = {"Ref": lid(default_synth, stack.mme.store.bucket)}
    for stage in (stack.mme.build.runner, stack.mme.build.serving_check):
        variables = project(default_synth, stage)["Environment"]["EnvironmentVariables"]
        assert bucket_ref in [v["Value"] for v in variables]


def test_only_the_endpoint_and_what_follows_it_wait_for_the_build(default_synth: Synthesized) -> None:
    resources = default_synth.resources
    graph = dependencies(resources)
    build_id, _ = only(default_synth, "AWS::CloudFormation::WaitCondition")
    endpoint_id, _ = only(default_synth, "AWS::SageMaker::Endpoint")
    waiting = {logical_id for logical_id in resources if build_id in upstream(graph, logical_id)}
    # The endpoint waits; everything else that waits does so through it (its scaling, its log retention, the
    # promotion and the promotion's own handlers, which may describe it).
    assert endpoint_id in waiting
    assert [
        logical_id for logical_id in waiting - {endpoint_id} if endpoint_id not in upstream(graph, logical_id)
    ] == []
    assert {"Custom::ManifestPromotion", "AWS::ApplicationAutoScaling::ScalableTarget"} <= {
        resources[logical_id]["Type"] for logical_id in waiting
    }
    endpoint = default_synth.stack.mme.endpoint
    for construct in (endpoint.model, endpoint.endpoint_config, endpoint.hosting.policy):
        assert lid(default_synth, construct) not in waiting
    assert not [
        alarm for alarm in default_synth.template.find_resources("AWS::CloudWatch::Alarm") if alarm in waiting
    ]
    # CreateModel and CreateEndpointConfig (image, instance type, inference AMI) wait on nothing with a
    # timeout: they run in the deployment's first minutes, not after both GPU stages.
    waits = {wait.resource_type: wait for wait in longest_waits(default_synth.template.to_json())}
    for resource_type in ("AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig"):
        assert not waits[resource_type].waits_for_build
        assert waits[resource_type].minutes == 0
    # The endpoint waits for both stages, queueing counted (2 x 5 + 30 + 15 minutes by default), and a margin.
    assert waits["AWS::SageMaker::Endpoint"].chain == [build_id]
    assert waits["AWS::SageMaker::Endpoint"].minutes == 55 + BUILD_DEADLINE_MARGIN_MINUTES


def test_the_serving_check_runs_in_the_endpoints_own_image(default_synth: Synthesized) -> None:
    stack = default_synth.stack
    check = project(default_synth, stack.mme.build.serving_check)
    image = stack.resolve(stack.mme.endpoint.model.primary_container)["image"]  # type: ignore[index]
    # The same registry mapping, region and tag as the endpoint's container.
    assert check["Environment"]["Image"] == image
    assert check["Environment"]["Type"] == "LINUX_GPU_CONTAINER"
    variables = {v["Name"]: v["Value"] for v in check["Environment"]["EnvironmentVariables"]}
    assert variables["SAGEMAKER_TRITON_LOG_VERBOSE"] == "0"  # the endpoint's container environment
    assert variables["TRITON_IMAGE_TAG"] == "25.04-py3"


# The shortest stages leave a minute after the runner's set-up (SETUP_MINUTES), with a one-model catalog the
# synthesis time estimate accepts there.
@pytest.mark.parametrize(("build", "check", "queue"), [(30, 15, 5), (20, 9, 13), (9, 9, 18), (300, 15, 5)])
def test_the_wait_holds_both_stages_their_queues_and_every_task_timeout(
    synth_with: SynthWith, build: int, check: int, queue: int
) -> None:
    synth = synth_with(
        build_timeout_minutes=build,
        serving_check_timeout_minutes=check,
        build_queue_timeout_minutes=queue,
        model_catalog=str(REPO_ROOT / "tests" / "support" / "models-tiny.yaml"),
    )
    stages = [
        project(synth, synth.stack.mme.build.runner),
        project(synth, synth.stack.mme.build.serving_check),
    ]
    assert [(p["QueuedTimeoutInMinutes"], p["TimeoutInMinutes"]) for p in stages] == [
        (queue, build),
        (queue, check),
    ]
    waited = sum(p["QueuedTimeoutInMinutes"] + p["TimeoutInMinutes"] for p in stages)
    (wait,) = synth.template.find_resources("AWS::CloudFormation::WaitCondition").values()
    assert int(wait["Properties"]["Timeout"]) == (waited + BUILD_DEADLINE_MARGIN_MINUTES) * 60
    # Each task's backstop is a minute past its stage's own CodeBuild limits, inside the margin.
    timeouts = [int(t) for t in re.findall(r'TimeoutSeconds\\":(\d+)', json.dumps(synth.resources))]
    assert sorted(timeouts) == sorted([(queue + build + 1) * 60, (queue + check + 1) * 60])


def test_default_runners_are_the_small_gpu_with_tensorrt_for_the_serving_image(
    default_synth: Synthesized,
) -> None:
    build = project(default_synth, default_synth.stack.mme.build.runner)
    check = project(default_synth, default_synth.stack.mme.build.serving_check)
    for stage, timeout in ((build, 30), (check, 15)):
        assert stage["Environment"]["ComputeType"] == "BUILD_GENERAL1_SMALL"
        assert (
            stage["TimeoutInMinutes"],
            stage["QueuedTimeoutInMinutes"],
            stage["ConcurrentBuildLimit"],
        ) == (
            timeout,
            5,
            1,
        )
    variables = {v["Name"]: v["Value"] for v in build["Environment"]["EnvironmentVariables"]}
    assert variables["TRITON_IMAGE_TAG"] == "25.04-py3"
    assert variables["TENSORRT_REQUIREMENT"] == "tensorrt-cu12==10.9.0.34"


def test_runner_settings_reach_both_projects_and_their_logs(synth_with: SynthWith) -> None:
    synth = synth_with(**VARIANTS["kms-on-p3"])  # p3, 24.05, the build's log kept 7 days
    for stage in (synth.stack.mme.build.runner, synth.stack.mme.build.serving_check):
        properties = project(synth, stage)
        # SMALL: LARGE's V100 is refused with today's build images (test_settings).
        assert properties["Environment"]["ComputeType"] == "BUILD_GENERAL1_SMALL"
        group = properties["LogsConfig"]["CloudWatchLogs"]["GroupName"]["Ref"]
        assert synth.resources[group]["Properties"]["RetentionInDays"] == 7
    assert project(synth, synth.stack.mme.build.runner)["TimeoutInMinutes"] == 30
    # 24.05's python3 is 3.10: the check runs with a uv-managed CPython 3.12 instead.
    spec = json.loads(project(synth, synth.stack.mme.build.serving_check)["Source"]["BuildSpec"])
    assert "python3 -m uv venv --python 3.12 /opt/serving-check" in spec["phases"]["install"]["commands"]


# ----- the endpoint: driver, network, logs, scaling, alarms ------------------------------------------------


def test_the_default_synth_sets_a_driver_that_serves_the_default_tag(default_synth: Synthesized) -> None:
    default_synth.template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InstanceType": "ml.g5.xlarge",
                        "InferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1",
                    }
                )
            ]
        },
    )
    default_synth.template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "EnableNetworkIsolation": True,
            "PrimaryContainer": Match.object_like(
                {"Image": {"Fn::Join": ["", Match.array_with(["/sagemaker-tritonserver:25.04-py3"])]}}
            ),
        },
    )


def test_ami_and_network_settings_reach_the_endpoint(synth_with: SynthWith) -> None:
    synth = synth_with(
        instance_type="ml.p3.2xlarge",
        triton_image_tag="24.03-py3",
        model_catalog=WITHOUT_TENSORRT,
        network_isolation=False,
    )
    synth.template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like({"InferenceAmiVersion": "al2-ami-sagemaker-inference-gpu-3-1"})
            ]
        },
    )
    synth.template.has_resource_properties("AWS::SageMaker::Model", {"EnableNetworkIsolation": False})


def test_the_endpoints_own_log_group_gets_the_retention_setting(synth_with: SynthWith) -> None:
    synth = synth_with(**VARIANTS["tuned"])
    synth.template.has_resource_properties(
        "Custom::LogRetention",
        {
            "LogGroupName": {"Fn::Join": ["", ["/aws/sagemaker/Endpoints/", endpoint_name(synth)]]},
            "RetentionInDays": 90,
        },
    )


def test_scaling_follows_the_endpoint_variant_and_can_be_left_out(
    synth_with: SynthWith, default_synth: Synthesized
) -> None:
    default_synth.template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "ResourceId": {
                "Fn::Join": ["", ["endpoint/", endpoint_name(default_synth), "/variant/AllTraffic"]]
            },
            "MinCapacity": 2,
            "MaxCapacity": 5,
        },
    )
    default_synth.template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 1)
    unscaled = synth_with(**VARIANTS["no-scaling-no-isolation"])
    assert unscaled.stack.mme.autoscaling is None
    unscaled.template.resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 0)
    unscaled.template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 0)


def test_scaling_settings_reach_the_target_and_policies(synth_with: SynthWith) -> None:
    synth = synth_with(**VARIANTS["tuned"])
    synth.template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget", {"MinCapacity": 2, "MaxCapacity": 8}
    )
    synth.template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"ProductionVariants": [Match.object_like({"InitialInstanceCount": 3})]},
    )
    synth.template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 2)
    synth.template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {"TargetTrackingScalingPolicyConfiguration": Match.object_like({"TargetValue": 72.5})},
    )


def test_alarms_watch_this_endpoint_and_the_dashboard_draws_the_scaling_bounds(synth_with: SynthWith) -> None:
    synth = synth_with(**VARIANTS["tuned"])
    alarms = synth.template.find_resources("AWS::CloudWatch::Alarm")
    assert len(alarms) == 7
    this_variant = [
        {"Name": "EndpointName", "Value": "TritonMultiModelEndpoint"},
        {"Name": "VariantName", "Value": "AllTraffic"},
    ]
    for name, alarm in alarms.items():
        queries = [q for q in alarm["Properties"]["Metrics"] if "MetricStat" in q]
        if name.startswith("ModelObservabilityThrash"):  # evictions from the log and ModelCacheHit
            dimensions = [q["MetricStat"]["Metric"]["Dimensions"] for q in queries]
            assert dimensions == [
                [{"Name": "EndpointName", "Value": "TritonMultiModelEndpoint"}],
                this_variant,
            ]
            continue
        [query] = queries
        assert query["MetricStat"]["Metric"]["Dimensions"] == this_variant
    synth.template.has_resource_properties("AWS::SNS::Subscription", {"Endpoint": "ops@example.com"})
    annotations = widget(synth.template, "Instances")["properties"]["annotations"]["horizontal"]
    assert {a["label"]: a["value"] for a in annotations} == {"min instances": 2, "max instances": 8}


def test_a_key_encrypts_the_store_and_reaches_the_hosting_role(synth_with: SynthWith) -> None:
    synth = synth_with(**VARIANTS["kms-on-nvme-type"])
    synth.template.has_resource_properties(
        "AWS::S3::Bucket",
        {"BucketEncryption": Match.object_like({"ServerSideEncryptionConfiguration": Match.any_value()})},
    )
    synth.template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [{"Action": "kms:Decrypt", "Effect": "Allow", "Resource": KEY_ARN}]
                )
            }
        },
    )


# ----- guarded updates, and the live manifest that follows the endpoint ------------------------------------


def test_the_rollback_alarms_exist_before_the_endpoint_and_the_template_has_no_cycle(
    default_synth: Synthesized,
) -> None:
    resources = default_synth.resources
    endpoint_id, endpoint = only(default_synth, "AWS::SageMaker::Endpoint")
    # The endpoint is named after the stack, so the alarms watch it by name ...
    assert endpoint["Properties"]["EndpointName"] == "TritonMultiModelEndpoint"
    rollback = endpoint["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    alarms = default_synth.template.find_resources("AWS::CloudWatch::Alarm")
    referenced = [a["AlarmName"]["Ref"] for a in rollback]
    stack = default_synth.stack
    guarding = [stack.get_logical_id(a.node.default_child) for a in stack.mme.monitoring.rollback_alarms]
    assert referenced and sorted(referenced) == sorted(guarding) and set(referenced) <= set(alarms)
    graph = dependencies(resources)
    # ... and the endpoint refers to them: CloudFormation creates them first, also on the first deployment,
    # and no alarm waits for the endpoint.
    assert set(referenced) <= upstream(graph, endpoint_id)
    assert not any(endpoint_id in upstream(graph, logical_id) for logical_id in alarms)
    # So the whole template orders: no resource is its own dependency (CloudFormation refuses cycles).
    assert [logical_id for logical_id in graph if logical_id in upstream(graph, logical_id)] == []


def test_the_default_update_is_a_one_instance_canary_baking_ten_minutes(default_synth: Synthesized) -> None:
    _, endpoint = only(default_synth, "AWS::SageMaker::Endpoint")
    assert endpoint["Properties"]["DeploymentConfig"]["BlueGreenUpdatePolicy"] == {
        "TrafficRoutingConfiguration": {
            "Type": "CANARY",
            "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
            "WaitIntervalInSeconds": 600,
        },
        "TerminationWaitInSeconds": 0,
        "MaximumExecutionTimeoutInSeconds": 7200,
    }


@pytest.mark.parametrize(
    ("overrides", "policy", "expected"),
    [
        (
            VARIANTS["linear-update"],
            "BlueGreenUpdatePolicy",
            {
                "TrafficRoutingConfiguration": {
                    "Type": "LINEAR",
                    "WaitIntervalInSeconds": 300,
                    "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 50},
                },
                "TerminationWaitInSeconds": 120,
                "MaximumExecutionTimeoutInSeconds": 3600,
            },
        ),
        (
            {"deployment_strategy": "all-at-once"},
            "BlueGreenUpdatePolicy",
            {
                "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 600},
                "TerminationWaitInSeconds": 0,
                "MaximumExecutionTimeoutInSeconds": 7200,
            },
        ),
        (
            VARIANTS["rolling-update"],
            "RollingUpdatePolicy",
            {
                "MaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 1},
                "WaitIntervalInSeconds": 600,
                "MaximumExecutionTimeoutInSeconds": 7200,
                "RollbackMaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 2},
            },
        ),
    ],
)
def test_every_strategy_reaches_the_endpoint(
    synth_with: SynthWith, overrides: dict[str, Any], policy: str, expected: dict[str, Any]
) -> None:
    synthesized = synth_with(**overrides)
    _, endpoint = only(synthesized, "AWS::SageMaker::Endpoint")
    config = endpoint["Properties"]["DeploymentConfig"]
    assert config[policy] == expected
    assert set(config) == {policy, "AutoRollbackConfiguration"}
    rollback = synthesized.stack.mme.monitoring.rollback_alarms
    assert len(config["AutoRollbackConfiguration"]["Alarms"]) == len(rollback) >= 1


def test_the_live_manifest_moves_only_after_the_build_and_the_endpoint(default_synth: Synthesized) -> None:
    graph = dependencies(default_synth.resources)
    promotion_id, promotion = only(default_synth, "Custom::ManifestPromotion")
    build_id, _ = only(default_synth, "AWS::CloudFormation::WaitCondition")
    _, build = only(default_synth, "Custom::ModelBuild")
    endpoint_id, _ = only(default_synth, "AWS::SageMaker::Endpoint")
    config_id, _ = only(default_synth, "AWS::SageMaker::EndpointConfig")
    assert {build_id, endpoint_id, config_id} <= graph[promotion_id]
    # Nothing waits for the promotion: it is the deployment's last step for the models.
    assert not [logical_id for logical_id, needs in graph.items() if promotion_id in needs]
    properties = promotion["Properties"]
    assert properties["Fingerprint"] == build["Properties"]["Fingerprint"]
    assert (
        properties["BuildManifestKey"]
        == f"manifests/builds/{build['Properties']['Fingerprint']}/manifest.json"
    )
    assert properties["EndpointName"] == endpoint_name(default_synth)
    assert properties["EndpointConfigName"] == {"Fn::GetAtt": [config_id, "EndpointConfigName"]}
    assert properties["Bucket"] == {"Ref": lid(default_synth, default_synth.stack.mme.store.bucket)}


def test_the_deployment_event_record_exists_before_the_endpoint_changes(default_synth: Synthesized) -> None:
    # An update that starts before the rule and its log group's policy exist is recorded by nothing.
    events = default_synth.stack.mme.deployment_events
    _, endpoint = only(default_synth, "AWS::SageMaker::Endpoint")
    assert {lid(default_synth, events.rule), lid(default_synth, events.policy)} <= set(endpoint["DependsOn"])


# ----- outputs, environment, bootstrap ---------------------------------------------------------------------


def test_outputs_name_the_endpoint_its_logs_the_bucket_and_the_model_prefix(
    default_synth: Synthesized,
) -> None:
    outputs = default_synth.template.to_json()["Outputs"]
    bucket = {"Ref": lid(default_synth, default_synth.stack.mme.store.bucket)}
    assert outputs["EndpointName"]["Value"] == endpoint_name(default_synth)
    assert outputs["ModelBucketName"]["Value"] == bucket
    assert outputs["ModelPrefixUrl"]["Value"] == {"Fn::Join": ["", ["s3://", bucket, "/models/"]]}
    assert outputs["EndpointLogGroup"]["Value"] == {
        "Fn::Join": ["", ["/aws/sagemaker/Endpoints/", endpoint_name(default_synth)]]
    }
    assert {"AlarmTopicArn", "DashboardName"} <= set(outputs)
    assert outputs["LiveManifestUrl"]["Value"] == {
        "Fn::Join": ["", ["s3://", bucket, "/manifests/manifest.json"]]
    }


# ----- both placements ------------------------------------------------------------------------------------
def test_a_catalog_with_both_placements_makes_both_endpoints_with_per_model_scaling(
    synth_with: SynthWith,
) -> None:
    synth = synth_with(**VARIANTS["hybrid-placement"])
    template, stack = synth.template, synth.stack
    template.resource_count_is("AWS::SageMaker::Endpoint", 2)
    # The multi-model endpoint keeps the tail (its Model is MultiModel); the components need no Model.
    template.resource_count_is("AWS::SageMaker::Model", 1)
    template.has_resource_properties(
        "AWS::SageMaker::Endpoint", {"EndpointName": "TritonMultiModelEndpoint-ic"}
    )
    names = {props["Properties"]["InferenceComponentName"] for props in
             template.find_resources("AWS::SageMaker::InferenceComponent").values()}  # fmt: skip
    assert names == {"TritonMultiModelEndpoint-ic-resnet50", "TritonMultiModelEndpoint-ic-mobilenet"}
    targets = template.find_resources("AWS::ApplicationAutoScaling::ScalableTarget")
    dimensions = sorted(target["Properties"]["ScalableDimension"] for target in targets.values())
    assert dimensions == ["sagemaker:inference-component:DesiredCopyCount"] * 2 + [
        "sagemaker:variant:DesiredInstanceCount"
    ]
    # The dashboard has a section for the components beside the endpoint's own.
    assert "Inference components" in json.dumps(template.to_json())
    assert stack.mme.dedicated is not None
    assert set(stack.mme.dedicated.endpoint.models) == {"resnet50", "mobilenet"}


def test_components_serve_the_archives_of_the_build_that_passed_the_serving_check(
    synth_with: SynthWith,
) -> None:
    synth = synth_with(**VARIANTS["hybrid-placement"])
    graph = dependencies(synth.resources)
    build_id, _ = only(synth, "AWS::CloudFormation::WaitCondition")
    lookup_id, lookup = only(synth, "Custom::ArchiveLocations")
    mme = synth.stack.mme
    assert mme.dedicated is not None
    locations = mme.dedicated.archive_locations
    assert build_id in upstream(graph, lookup_id)
    assert lookup["Properties"]["BuildManifestKey"].endswith(
        f"builds/{mme.build.serving_check.fingerprint}/manifest.json"
    )
    for component in mme.dedicated.endpoint.models.values():
        component_id = lid(synth, component.component)
        assert {build_id, lookup_id} <= upstream(graph, component_id)
        assert synth.resources[component_id]["Properties"]["Specification"]["Container"]["ArtifactUrl"] == {
            "Fn::GetAtt": [lookup_id, locations.attributes[component.model]]
        }


def test_outputs_name_the_component_endpoint_and_each_models_component(
    default_synth: Synthesized, synth_with: SynthWith
) -> None:
    assert not {"InferenceComponentEndpointName", "InferenceComponentNames"} & set(
        default_synth.template.to_json()["Outputs"]
    )
    synth = synth_with(**VARIANTS["hybrid-placement"])
    outputs = synth.template.to_json()["Outputs"]
    assert synth.stack.mme.dedicated is not None
    assert outputs["InferenceComponentEndpointName"]["Value"] == {
        "Fn::GetAtt": [lid(synth, synth.stack.mme.dedicated.endpoint.endpoint), "EndpointName"]
    }
    assert json.loads(outputs["InferenceComponentNames"]["Value"]) == {
        "resnet50": "TritonMultiModelEndpoint-ic-resnet50",
        "mobilenet": "TritonMultiModelEndpoint-ic-mobilenet",
    }


def test_the_acceptance_role_may_call_both_endpoints(synth_with: SynthWith) -> None:
    synth = synth_with(**VARIANTS["hybrid-placement"])
    role = lid(synth, synth.stack.mme.operators.acceptance_role)
    invoked = set()
    for policy in synth.template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role} not in policy["Properties"].get("Roles", []):
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if "sagemaker:InvokeEndpoint" in actions:
                resources = (
                    statement["Resource"]
                    if isinstance(statement["Resource"], list)
                    else [statement["Resource"]]
                )
                invoked |= {json.dumps(resource, sort_keys=True) for resource in resources}
    # (The multi-model endpoint's invoke is in the role's own policy, tested in test_operator_access.py.)
    assert synth.stack.mme.dedicated is not None
    dedicated = synth.stack.mme.dedicated.endpoint
    components = [
        {"Fn::GetAtt": [lid(synth, model.component), "InferenceComponentArn"]}
        for model in dedicated.models.values()
    ]
    assert len(components) == 2
    assert invoked == {
        json.dumps(arn, sort_keys=True) for arn in [{"Ref": lid(synth, dedicated.endpoint)}, *components]
    }


def test_grant_invoke_covers_both_endpoints() -> None:
    from synth_support import HYBRID, bare_stack, template_logical_id

    from triton_mme_cdk import TritonMultiModelEndpoint, TritonMultiModelEndpointProps, load_build_catalog

    stack = bare_stack()
    catalog, files = load_build_catalog(HYBRID)
    props = TritonMultiModelEndpointProps(
        catalog=catalog, catalog_files=files, dedicated_endpoint_name="hot-models"
    )
    mme = TritonMultiModelEndpoint(stack, "Models", props)
    role = iam.Role(stack, "Caller", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    grant = mme.grant_invoke(role)
    assert mme.dedicated is not None and mme.dedicated.endpoint.name == "hot-models"
    arns = [stack.resolve(arn) for statement in grant.principal_statements for arn in statement.resources]
    assert {arn["Ref"] for arn in arns if "Ref" in arn} == {
        template_logical_id(mme.cfn_endpoint),
        template_logical_id(mme.dedicated.endpoint.endpoint),
    }
    # A request naming a component may be authorized against the component's ARN too.
    assert [arn["Fn::GetAtt"] for arn in arns if "Ref" not in arn] == [
        [template_logical_id(model.component), "InferenceComponentArn"]
        for model in mme.dedicated.endpoint.models.values()
    ]


def test_stack_is_environment_agnostic_unless_a_region_is_given(
    default_synth: Synthesized, synth_with: SynthWith
) -> None:
    assert default_synth.stack.resolve(default_synth.stack.region) == {"Ref": "AWS::Region"}
    pinned = synth_with(**VARIANTS["pinned-region"])
    assert pinned.stack.region == "ap-northeast-1"
    assert pinned.template.to_json()["Mappings"], "the image mapping stays in a region-pinned template"


@pytest.mark.parametrize("variant", ["defaults", "hybrid-placement"])
def test_the_synth_warns_of_nothing(synth_with: SynthWith, variant: str) -> None:
    """`make synth` prints CDK's warnings; each one is either fixed or acknowledged with its reason."""
    stack = synth_with(**VARIANTS[variant]).stack
    warnings = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    assert [(w.id, w.entry.data) for w in warnings] == []


def test_templates_require_the_bootstrap_version_preflight_checks_for(default_synth: Synthesized) -> None:
    rule = default_synth.template.to_json()["Rules"]["CheckBootstrapVersion"]
    refused = rule["Assertions"][0]["Assert"]["Fn::Not"][0]["Fn::Contains"][0]
    assert refused == [str(version) for version in range(1, PLATFORM.limits.cdk_min_bootstrap_version.value)]


def test_every_function_of_the_stack_may_write_only_its_own_log_group(default_synth: Synthesized) -> None:
    """No role holds AWSLambdaBasicExecutionRole (any group): a function with a LoggingConfig group writes
    that group alone, one without (CDK's log-retention function) the streams of its default group."""
    functions = function_logging(default_synth.template)
    assert len(functions) > 1
    for logical_id, function in functions.items():
        assert function.managed_policies == [], logical_id
        if function.log_group is not None:
            assert function.writable == [{"Fn::GetAtt": [function.log_group["Ref"], "Arn"]}], logical_id
            continue
        stream_writes = [r for r in function.writable if r["Fn::Join"][1][-1] == ":log-stream:*"]
        assert [r["Fn::Join"][1][-2:] for r in stream_writes] == [[{"Ref": logical_id}, ":log-stream:*"]]
    # CDK's log-retention function is one per stack and may set only the endpoint group's retention: another
    # LogRetention (a construct's log_retention prop) would share it and fail at deploy time.
    (retention,) = default_synth.template.find_resources("Custom::LogRetention").values()
    assert retention["Properties"]["LogGroupName"] == {
        "Fn::Join": ["", ["/aws/sagemaker/Endpoints/", endpoint_name(default_synth)]]
    }


# ----- snapshot -----------------------------------------------------------------------------------------


def mask_asset_hashes(data: Any, path: PropertyPath) -> Any:
    """Asset hashes change with any byte of bundled code; the snapshot guards the template's shape."""
    if isinstance(data, str):
        return ASSET_HASH.sub("<asset-hash>", data)
    return data


def test_stack_template_matches_snapshot(default_synth: Synthesized, snapshot: SnapshotAssertion) -> None:
    """A tripwire for unintended template changes; after an intended one: `make snapshot-update`."""
    expected = snapshot.with_defaults(extension_class=JSONSnapshotExtension)
    assert default_synth.template.to_json() == expected(matcher=mask_asset_hashes)


# ----- cdk-nag and cfn-lint over every variant ------------------------------------------------------------

LINT_REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-3", "cn-north-1"]


def nag_findings(synth: Synthesized) -> list[dict[str, Any]]:
    report = synth.validation_report()
    return [
        violation
        for plugin in report["pluginReports"]
        if plugin["pluginName"] == "AwsSolutions"
        for violation in plugin["violations"]
    ]


@pytest.mark.parametrize("variant", VARIANTS)
def test_cdk_nag_reports_nothing_unacknowledged(synth_with: SynthWith, variant: str) -> None:
    findings = nag_findings(synth_with(**VARIANTS[variant]))
    assert findings == [], [f"{f['ruleName']} ({f['severity']})" for f in findings]


def test_cdk_nag_is_live_and_would_catch_a_broad_grant(tmp_path: Path) -> None:
    """A negative control: the same plugin wiring flags an unacknowledged wildcard."""
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path), context=FEATURE_FLAGS)
    stack = cdk.Stack(app, "Probe")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    rules = {v["ruleName"] for p in report["pluginReports"] for v in p["violations"]}
    assert "AwsSolutions-IAM5[Resource::*]" in rules


def test_every_acknowledgment_has_a_reason(default_synth: Synthesized) -> None:
    reasons: dict[str, str] = {}
    for construct in default_synth.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                reasons.update(entry.data)
    assert any(rule.endswith("AwsSolutions-IAM5[Resource::*]") for rule in reasons), sorted(reasons)
    for rule, reason in reasons.items():
        assert len(reason.strip()) >= 30, f"{rule}: the reason must explain the exception"


class _RecordedValidations:
    """Stands in for `cdk.Validations.of(scope)`: records each acknowledgment instead of making it."""

    def __init__(self, scope: IConstruct, recorded: list[tuple[str, str]]) -> None:
        self._scope, self._recorded = scope, recorded

    def acknowledge(self, *acknowledgments: cdk.Acknowledgment) -> None:
        self._recorded.extend((self._scope.node.path, a.id) for a in acknowledgments)

    def add_plugins(self, *plugins: Any) -> None:
        pass  # the checks run below, on the tree, without the acknowledgments


def unmatched_acknowledgments(monkeypatch: pytest.MonkeyPatch, build: Callable[[cdk.App], Any]) -> list[str]:
    """The acknowledgments `build` makes that no cdk-nag finding needs: the app is built with every
    acknowledgment recorded rather than made, then checked; an acknowledgment is used when a finding of its
    id lies on its construct or below it (cdk-nag looks for one there and on each parent). cdk-nag walks the
    construct tree, not the template, and this app adds no Aspects, so the tree needs no synthesis."""
    from cdk_nag import AwsSolutionsChecks

    recorded: list[tuple[str, str]] = []
    with monkeypatch.context() as patch:
        stand_in = staticmethod(lambda scope: _RecordedValidations(scope, recorded))
        patch.setattr(cdk.Validations, "of", stand_in)
        app = cdk.App(context=FEATURE_FLAGS)
        build(app)
    findings = [
        (violation.rule_name, resource.construct_path or "")
        for violation in AwsSolutionsChecks().validate_scope(app).violations
        for resource in violation.violating_resources
    ]
    assert recorded, "no acknowledgment was recorded: the stand-in did not replace cdk.Validations.of"
    return [
        f"{rule} at {path}"
        for path, rule in recorded
        if not any(name == rule and (at == path or at.startswith(path + "/")) for name, at in findings)
    ]


# Acknowledgments vary with the settings only through the encryption key (nag.acknowledge_codebuild_grants);
# kms-on-p3 also gives the endpoint config a volume key; hybrid-placement adds the archive lookup's provider.
@pytest.mark.parametrize("variant", ["defaults", "kms-on-p3", "hybrid-placement"])
def test_every_acknowledgment_matches_a_finding(monkeypatch: pytest.MonkeyPatch, variant: str) -> None:
    """An acknowledgment that matches nothing hides nothing today and anything tomorrow: each is needed."""
    from triton_mme_cdk.composition import compose
    from triton_mme_cdk.settings import Settings

    settings = Settings(**VARIANTS[variant])
    assert unmatched_acknowledgments(monkeypatch, lambda app: compose(app, settings)) == []


def test_an_acknowledgment_that_matches_nothing_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The negative control: of two acknowledgments on a role with a wildcard grant, the one for a notebook
    rule (SM1, which no role can break) is reported, the one for the wildcard is not."""

    def build(app: cdk.App) -> None:
        stack = cdk.Stack(app, "Probe")
        role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
        role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
        for rule in ("AwsSolutions-IAM5[Resource::*]", "AwsSolutions-SM1"):
            cdk.Validations.of(role).acknowledge(cdk.Acknowledgment(id=rule, reason="a probe"))

    assert unmatched_acknowledgments(monkeypatch, build) == ["AwsSolutions-SM1 at Probe/Role"]


# ----- checkov over the templates --------------------------------------------------------------------------

SCAN_CHECKOV = REPO_ROOT / ".venv-scan" / "bin" / "checkov"


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_checkov_skip_names_a_known_check_and_gives_its_reason(
    synth_with: SynthWith, variant: str
) -> None:
    """Each skip in the template's Metadata names a check of CHECKS that applies to its resource's type, once,
    with a reason (checkov itself runs below, on CHECKOV_VARIANTS)."""
    resources = synth_with(**VARIANTS[variant]).resources
    assert checkov_scan.skip_problems(resources) == []
    assert any("checkov" in resource.get("Metadata", {}) for resource in resources.values())


def test_a_skip_without_reason_or_of_an_unknown_check_is_reported() -> None:
    def bucket(*skips: dict[str, str]) -> dict[str, Any]:
        return {"Type": "AWS::S3::Bucket", "Metadata": {"checkov": {"skip": list(skips)}}}

    reason = "a reason long enough to explain the exception"
    found = checkov_scan.skip_problems(
        {
            "Unknown": bucket({"id": "CKV_AWS_999", "comment": reason}),
            "WrongType": bucket({"id": "CKV_AWS_117", "comment": reason}),
            "NoReason": bucket({"id": "CKV_AWS_18"}),
            "Twice": bucket({"id": "CKV_AWS_18", "comment": reason}, {"id": "CKV_AWS_18", "comment": reason}),
            "Fine": bucket({"id": "CKV_AWS_18", "comment": reason}),
        }
    )
    assert [problem.split(":")[0] for problem in found] == ["Unknown", "WrongType", "NoReason", "Twice"]


# kms-on-p3 adds the key to the bucket, the runners and the endpoint config; no-scaling-no-isolation turns the
# Model's network isolation off: what checkov checks changes most with those.
CHECKOV_VARIANTS = ["defaults", "kms-on-p3", "no-scaling-no-isolation", "hybrid-placement"]


@dataclass(frozen=True)
class CheckovRun:
    report: dict[str, Any]
    skips: dict[checkov_scan.Skip, str]
    problems: list[str]


@pytest.fixture(scope="module")
def checkov_run(synth_with: SynthWith, tmp_path_factory: pytest.TempPathFactory) -> CheckovRun:
    """checkov (requirements-scan.txt's pin, in .venv-scan) once on the templates of every CHECKOV_VARIANTS
    variant, each copied under its variant's name (`<variant>--<template>`), and, as a negative control in the
    same run, on a probe template holding one unjustified bucket and one skip that matches nothing. One run,
    not one per variant: most of checkov's time is loading its checks."""
    assert SCAN_CHECKOV.exists(), (
        "checkov is missing: `make install` installs requirements-scan.txt into .venv-scan"
    )
    folder = tmp_path_factory.mktemp("checkov")
    templates = []
    for variant in CHECKOV_VARIANTS:
        for template in sorted(synth_with(**VARIANTS[variant]).assembly_dir.glob("*.template.json")):
            templates.append(folder / f"{variant}--{template.name}")
            shutil.copyfile(template, templates[-1])
    probe = folder / "Probe.template.json"
    stray = {"checkov": {"skip": [{"id": "CKV_AWS_117", "comment": "a function that is not there"}]}}
    probe.write_text(
        json.dumps(
            {
                "Resources": {
                    "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {}},
                    "Topic": {"Type": "AWS::SNS::Topic", "Properties": {}, "Metadata": stray},
                }
            }
        )
    )
    skips: dict[checkov_scan.Skip, str] = {}
    for template in [*templates, probe]:
        skips.update(checkov_scan.template_skips(template))
    report = checkov_scan.run_checkov(str(SCAN_CHECKOV), [*templates, probe])
    return CheckovRun(report, skips, checkov_scan.problems(report, skips))


@pytest.mark.parametrize("variant", CHECKOV_VARIANTS)
def test_checkov_finds_nothing_unjustified_and_every_skip_is_applied(
    checkov_run: CheckovRun, variant: str
) -> None:
    """The variant's templates were scanned, none has a problem, and checkov applied each of their skips."""
    mine = f"{variant}--"
    scanned = {
        Path(check["file_path"]).name
        for kind in ("passed_checks", "failed_checks", "skipped_checks")
        for check in checkov_run.report["results"][kind]
    }
    assert any(name.startswith(mine) for name in scanned), sorted(scanned)
    assert [problem for problem in checkov_run.problems if mine in problem] == []
    skips = {skip for skip in checkov_run.skips if skip[0].startswith(mine)}
    applied = {
        (Path(check["file_path"]).name, check["resource"].split(".", 1)[1], check["check_id"])
        for check in checkov_run.report["results"]["skipped_checks"]
    }
    assert skips and skips <= applied, sorted(skips - applied)


def test_checkov_reports_the_probes_problems_and_nothing_else(checkov_run: CheckovRun) -> None:
    """The negative control: the probe's unjustified bucket and stray skip are found in the same run, and
    every other problem (one naming no template, such as a check checkov renamed) fails here."""
    problems = checkov_run.problems
    assert [p for p in problems if "Probe.template.json" not in p] == []
    assert any(p.startswith("failed: CKV_AWS_18 ") for p in problems), problems
    assert "skip matches nothing: CKV_AWS_117 on Topic in Probe.template.json" in problems
    assert checkov_run.report["summary"]["skipped"] == len(checkov_run.skips) - 1 > 0


@pytest.fixture(scope="module")
def lint_rules() -> Rules:
    """cfn-lint's rules as its command line loads them, once (about a second) for every template here."""
    return Runner(ConfigMixIn(regions=LINT_REGIONS)).rules


def test_the_lint_rules_find_a_misspelled_property(lint_rules: Rules) -> None:
    template, _ = decode_str(
        '{"Resources": {"B": {"Type": "AWS::S3::Bucket", "Properties": {"BucketNam": "b"}}}}'
    )
    matches = run_template_by_data(template, ConfigMixIn(regions=LINT_REGIONS), lint_rules)
    assert [m.rule.id for m in matches] == ["E3002"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_cfn_lint_is_clean_on_every_template(synth_with: SynthWith, variant: str, lint_rules: Rules) -> None:
    synth = synth_with(**VARIANTS[variant])
    templates = sorted(synth.assembly_dir.glob("*.template.json"))
    assert templates, "the assembly holds no template"
    regions = [synth.stack.region] if variant == "pinned-region" else LINT_REGIONS
    if variant == "hybrid-placement":  # inference components exist in fewer regions (platform data)
        regions = [region for region in regions if region in PLATFORM.components.regions.value]
    for template in templates:
        decoded, errors = decode_str(template.read_text(encoding="utf-8"))
        assert errors == [] and decoded is not None, errors
        matches = run_template_by_data(decoded, ConfigMixIn(regions=regions), lint_rules)
        assert [str(m) for m in matches] == []


def test_synthesis_says_what_a_new_image_tag_would_rebuild(synth_with: SynthWith) -> None:
    def notes(synth: Synthesized) -> list[str]:
        found = Annotations.from_stack(synth.stack).find_info("*", Match.string_like_regexp("TensorRT plan"))
        return [str(message.entry.data) for message in found]

    (note,) = notes(synth_with())
    assert note.startswith("image 25.04-py3: the catalog's 1 TensorRT plan is built for its TensorRT")
    assert notes(synth_with(model_catalog=WITHOUT_TENSORRT)) == []

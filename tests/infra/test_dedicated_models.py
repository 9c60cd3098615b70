"""A catalog's `placement: dedicated` entries: the synth-time rules, the inference component endpoint in a
bare stack, and the handler that resolves each component's archive from the build's manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from synth_support import bare_stack

from triton_mme.catalog import Catalog, DedicatedPlacement, parse_catalog
from triton_mme.core.naming import bounded_name
from triton_mme_cdk.constructs.build.archive_locations_handler import handler
from triton_mme_cdk.constructs.dedicated.inference_component_endpoint import InferenceComponentEndpoint
from triton_mme_cdk.constructs.endpoint.triton_image import TritonImage
from triton_mme_cdk.constructs.store.model_store import ModelStore, ModelStoreProps
from triton_mme_cdk.settings import AlarmThresholds, ScalingSettings, Settings, UpdatePolicy
from triton_mme_cdk.settings.placement_rules import (
    component_instances,
    copy_footprint,
    dedicated_entries,
    dedicated_problem,
    rolling_batch,
    update_surge,
)


def catalog(*entries: dict[str, Any]) -> Catalog:
    return parse_catalog({"models": list(entries)}, origin="test")


def dedicated(name: str, **placement: Any) -> dict[str, Any]:
    return {
        "name": name,
        "source": "torchvision:resnet50",
        "weights": "random",
        "formats": ["onnx"],
        "max_batch_size": 8,
        "placement": "dedicated",
        "dedicated": placement,
    }


def huge_bert(name: str, hidden: int, layers: int) -> dict[str, Any]:
    config = {"model_type": "bert", "hidden_size": hidden, "intermediate_size": 4 * hidden}
    return {
        **dedicated(name),
        "source": "huggingface:example/huge",
        "sequence_length": 16,
        "hf_config": {**config, "num_hidden_layers": layers},
    }


HYBRID = catalog(
    {"name": "tail", "source": "torchvision:squeezenet1_1", "weights": "random", "formats": ["onnx"],
     "max_batch_size": 4},
    dedicated("hot", copies=1, min_copies=0, max_copies=3),
    dedicated("warm", copies=2, min_copies=2, max_copies=4),
)  # fmt: skip


# ----- synth-time rules -----------------------------------------------------------------------------------
def test_a_catalog_without_dedicated_entries_asks_nothing() -> None:
    on_p3 = Settings(instance_type="ml.p3.2xlarge", triton_image_tag="24.05-py3")
    assert (
        dedicated_problem(on_p3, catalog({**dedicated("a"), "placement": "mme", "dedicated": None})) is None
    )


@pytest.mark.parametrize(
    ("settings", "entries", "message"),
    [
        (
            {"instance_type": "ml.p3.2xlarge", "triton_image_tag": "24.05-py3"},
            [dedicated("hot")],
            r"^models 'hot' have placement: dedicated, but instanceType=ml\.p3\.2xlarge is unconfirmed for "
            r"inference components \(.*inference_components\.yaml\); allowed: ml\.g4dn\.\*, ml\.g5\.\*$",
        ),
        (
            # The only region a deployment reaches (a confirmed or unconfirmed GPU build region) without them.
            {"region": "cn-north-1", "allow_unconfirmed_build_region": True},
            [dedicated("hot")],
            r"^models 'hot' have placement: dedicated, but region=cn-north-1 has no "
            r"AWS::SageMaker::InferenceComponent in CloudFormation; allowed: ap-northeast-1, .*us-west-2$",
        ),
        (
            {"autoscaling": False},
            [dedicated("hot", min_copies=0)],
            r"^model 'hot': dedicated\.min_copies: 0 scales to zero through the component's own scaling, "
            r"which autoscaling=false turns off; allowed: min_copies 1 or more, or autoscaling=true$",
        ),
        (
            {},
            [huge_bert("giant", hidden=8192, layers=24)],
            r"^model 'giant': dedicated: one copy needs about \d+\.\d GiB of GPU memory \(estimated from its "
            r"parameters, onnx\), more than the 22\.5 GiB of instanceType=ml\.g5\.xlarge's A10G; allowed: ",
        ),
        (
            {},
            [huge_bert("wide", hidden=4096, layers=20)],
            r"^model 'wide': dedicated: one copy needs about \d+\.\d GiB of host memory, more than the 14\.0 "
            r"GiB instanceType=ml\.g5\.xlarge leaves after 2 GiB for itself; allowed: a larger size",
        ),
        (
            {},
            [dedicated("a", min_copies=10, copies=10, max_copies=60), dedicated("b", max_copies=30)],
            r"^the dedicated entries' max_copies add up to 90 copies, one ml\.g5\.xlarge instance each, and "
            r"their updates add 33 more: 123 instances, more than 100; allowed: fewer max_copies$",
        ),
        (
            {"region": "eu-west-1"},
            [dedicated("hot", min_copies=0), dedicated("warm")],
            r"^models 'hot' have dedicated\.min_copies: 0, which scales the endpoint to zero instances "
            r"\(MinInstanceCount 0\), known to be accepted only in us-east-1, not region=eu-west-1 "
            r"\(triton_mme/core/platform_data/inference_components\.yaml\); allowed: min_copies 1 or more, "
            r"or region=us-east-1$",
        ),
    ],
)
def test_what_cannot_deploy_is_refused_in_one_line(
    settings: dict[str, Any], entries: list[dict[str, Any]], message: str
) -> None:
    problem = dedicated_problem(Settings(**settings), catalog(*entries))
    assert problem is not None and "\n" not in problem
    assert __import__("re").match(message, problem), problem


def test_the_same_entries_deploy_where_the_platform_allows_them() -> None:
    assert dedicated_problem(Settings(region="us-east-1"), catalog(dedicated("hot", min_copies=0))) is None
    # An environment-agnostic template: preflight checks the deploy region.
    assert dedicated_problem(Settings(), catalog(dedicated("hot", min_copies=0))) is None
    assert dedicated_problem(Settings(region="eu-west-1"), catalog(dedicated("hot"))) is None
    assert dedicated_problem(Settings(instance_type="ml.g4dn.xlarge"), catalog(dedicated("hot"))) is None


def test_a_copy_asks_for_one_gpu_and_its_estimated_host_memory() -> None:
    footprint = copy_footprint(HYBRID.entry("hot"))
    assert footprint.accelerators == 1
    # ResNet-50: 25.6 M parameters x 4 bytes, plus the backend's 128 MiB and the container's 512 MiB.
    assert 730 <= footprint.min_memory_mb <= 745
    assert 0.6e9 < footprint.gpu_bytes < 0.8e9


def test_instances_follow_the_copies_and_reach_zero_only_with_a_component_that_may() -> None:
    # hot: 0..3 copies, updated all at once (3 more); warm: 2..4, rolled one copy at a time (1 more).
    assert component_instances(HYBRID) == (0, 3, 11)
    assert component_instances(catalog(dedicated("a", copies=2, max_copies=3), dedicated("b"))) == (2, 3, 8)


@pytest.mark.parametrize(
    ("copy_range", "batch"),
    [
        ((1, 1), None),  # one copy is 100 %: no whole copy is 5-50 % of it
        ((0, 3), None),  # at one copy (or scaled to zero) the same
        ((1, 4), None),
        ((2, 2), 1),  # 50 %
        ((2, 4), 1),  # 25-50 %
        ((20, 20), 1),  # 5 %
        ((21, 21), 2),  # one copy is 4.8 %: two, 9.5 %
        ((64, 64), 4),  # 6.25 % (one copy, 1.6 %, is below the range)
        ((10, 40), 2),  # 5-20 %
        ((3, 60), None),  # 3 copies are at least 5 % of 60 but 100 % of 3
    ],
)
def test_a_rolling_batch_is_5_to_50_percent_of_every_copy_count_or_all_at_once(
    copy_range: tuple[int, int], batch: int | None
) -> None:
    low, high = copy_range
    placement = DedicatedPlacement(copies=max(low, 1), min_copies=low, max_copies=high)
    assert rolling_batch(placement) == batch
    assert update_surge(placement) == (batch if batch is not None else high)
    if batch is not None:
        for count in range(max(low, 1), high + 1):
            assert 5 <= 100 * batch / count <= 50


def test_names_stay_within_sagemakers_limit_and_distinct() -> None:
    assert bounded_name("stack", "resnet50") == "stack-resnet50"
    long_a, long_b = bounded_name("s" * 60, "model-a"), bounded_name("s" * 60, "model-b")
    assert len(long_a) == len(long_b) == 63 and long_a != long_b


# ----- the construct ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def components() -> tuple[Template, InferenceComponentEndpoint, iam.Role]:
    stack = bare_stack()
    store = ModelStore(stack, "Store", ModelStoreProps())
    image = TritonImage(stack, "Image", tag="25.04-py3")
    entries = dedicated_entries(HYBRID)
    endpoint = InferenceComponentEndpoint(
        stack,
        "Dedicated",
        name="team-ic",
        store=store,
        image=image,
        environment={"SAGEMAKER_TRITON_LOG_INFO": "true"},
        entries=entries,
        artifact_urls={entry.name: f"s3://bucket/models/{entry.name}-onnx.tar.gz" for entry in entries},
        instance_type="ml.g5.xlarge",
        instances=component_instances(HYBRID),
        scaling=ScalingSettings(invocations_per_copy_target=30),
    )
    endpoint.guard_updates(
        UpdatePolicy(wait_seconds=300, timeout_seconds=3600),
        thresholds=AlarmThresholds(),
        alarm_topic=sns.Topic(stack, "Topic"),
    )
    caller = iam.Role(stack, "Caller", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    endpoint.grant_invoke(caller)
    reader = iam.Role(stack, "Reader", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    endpoint.grant_describe(reader)
    return Template.from_stack(stack), endpoint, caller


def test_the_endpoint_config_hosts_components_with_managed_instance_scaling(
    components: tuple[Template, InferenceComponentEndpoint, iam.Role],
) -> None:
    template, endpoint, _ = components
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ExecutionRoleArn": Match.any_value(),
            "ProductionVariants": [
                {
                    "VariantName": "AllTraffic",
                    "InstanceType": "ml.g5.xlarge",
                    "InitialInstanceCount": 3,
                    "ManagedInstanceScaling": {
                        "Status": "ENABLED",
                        "MinInstanceCount": 0,
                        "MaxInstanceCount": 11,
                    },
                    "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
                    "ModelName": Match.absent(),
                }
            ],
        },
    )
    template.has_resource_properties("AWS::SageMaker::Endpoint", {"EndpointName": "team-ic"})
    # CreateEndpointConfig passes the execution role: its permissions exist first.
    stack = endpoint.endpoint.stack
    config = template.to_json()["Resources"][stack.get_logical_id(endpoint.endpoint_config)]
    assert stack.get_logical_id(endpoint.hosting.policy.node.default_child) in config["DependsOn"]


def test_each_dedicated_model_is_one_component_serving_its_archive(
    components: tuple[Template, InferenceComponentEndpoint, iam.Role],
) -> None:
    template, endpoint, _ = components
    assert endpoint.component_names == {"hot": "team-ic-hot", "warm": "team-ic-warm"}
    template.resource_count_is("AWS::SageMaker::InferenceComponent", 2)
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "InferenceComponentName": "team-ic-warm",
            "VariantName": "AllTraffic",
            "RuntimeConfig": {"CopyCount": 2},
            "Specification": {
                "Container": Match.object_like(
                    {
                        "ArtifactUrl": "s3://bucket/models/warm-onnx.tar.gz",
                        "Environment": {"SAGEMAKER_TRITON_LOG_INFO": "true"},
                    }
                ),
                "ComputeResourceRequirements": {
                    "NumberOfAcceleratorDevicesRequired": 1,
                    "MinMemoryRequiredInMb": copy_footprint(HYBRID.entry("warm")).min_memory_mb,
                },
                "StartupParameters": Match.any_value(),
            },
        },
    )


def test_each_component_scales_on_its_own_copies(
    components: tuple[Template, InferenceComponentEndpoint, iam.Role],
) -> None:
    template, _, _ = components
    for name, low, high in (("team-ic-hot", 0, 3), ("team-ic-warm", 2, 4)):
        template.has_resource_properties(
            "AWS::ApplicationAutoScaling::ScalableTarget",
            {
                "ResourceId": f"inference-component/{name}",
                "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
                "MinCapacity": low,
                "MaxCapacity": high,
            },
        )
    template.resource_properties_count_is(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "PredefinedMetricSpecification": {
                        "PredefinedMetricType": "SageMakerInferenceComponentInvocationsPerCopy"
                    },
                    "TargetValue": 30,
                }
            ),
        },
        2,
    )


def test_only_a_component_that_may_scale_to_zero_gets_the_step_back_from_zero(
    components: tuple[Template, InferenceComponentEndpoint, iam.Role],
) -> None:
    template, endpoint, _ = components
    assert endpoint.models["warm"].scaling is not None and endpoint.models["warm"].scaling.wake_policy is None
    template.resource_properties_count_is(
        "AWS::ApplicationAutoScaling::ScalingPolicy", {"PolicyType": "StepScaling"}, 1
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": "NoCapacityInvocationFailures",
            "Namespace": "AWS/SageMaker",
            "Dimensions": [{"Name": "InferenceComponentName", "Value": "team-ic-hot"}],
            "Threshold": 1,
        },
    )


def test_updates_roll_copies_over_and_roll_back_on_the_components_5xx_alarm(
    components: tuple[Template, InferenceComponentEndpoint, iam.Role],
) -> None:
    template, endpoint, _ = components
    stack = endpoint.endpoint.stack
    alarm = endpoint.models["warm"].errors_5xx
    assert alarm is not None
    # warm: 2..4 copies, one copy is 25-50 % of each: rolled one at a time, and rolled back the same way.
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "InferenceComponentName": "team-ic-warm",
            "DeploymentConfig": {
                "RollingUpdatePolicy": {
                    "MaximumBatchSize": {"Type": "COPY_COUNT", "Value": 1},
                    "RollbackMaximumBatchSize": {"Type": "COPY_COUNT", "Value": 1},
                    "WaitIntervalInSeconds": 300,
                    "MaximumExecutionTimeoutInSeconds": 3600,
                },
                "AutoRollbackConfiguration": {
                    "Alarms": [{"AlarmName": {"Ref": stack.get_logical_id(alarm.node.default_child)}}]
                },
            },
        },
    )
    # hot: at one copy no whole copy is within 5-50 %: no rolling policy, SageMaker updates it all at once.
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {"InferenceComponentName": "team-ic-hot", "DeploymentConfig": Match.absent()},
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": "Invocation5XXErrors",
            "Dimensions": [{"Name": "InferenceComponentName", "Value": "team-ic-hot"}],
        },
    )  # the alarm still notifies
    # SageMaker reads the rollback alarms with the endpoint's execution role, those alarms only.
    policy_id = stack.get_logical_id(endpoint.hosting.policy.node.default_child)
    hosting = template.to_json()["Resources"][policy_id]
    (describe,) = [
        statement
        for statement in hosting["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "cloudwatch:DescribeAlarms"
    ]
    alarms = [model.errors_5xx for model in endpoint.models.values()]
    assert describe["Resource"] == [
        {"Fn::GetAtt": [stack.get_logical_id(a.node.default_child), "Arn"]} for a in alarms if a is not None
    ]


def test_grant_invoke_is_invoke_endpoint_on_this_endpoint_and_its_components_only(
    components: tuple[Template, InferenceComponentEndpoint, iam.Role],
) -> None:
    template, endpoint, caller = components
    stack = endpoint.endpoint.stack
    component_arns = [
        {"Fn::GetAtt": [stack.get_logical_id(endpoint.models[name].component), "InferenceComponentArn"]}
        for name in ("hot", "warm")
    ]
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "Roles": [{"Ref": stack.get_logical_id(caller.node.default_child)}],
            "PolicyDocument": {
                "Statement": [
                    {
                        "Action": "sagemaker:InvokeEndpoint",
                        "Effect": "Allow",
                        "Resource": Match.array_with(
                            [*component_arns, {"Ref": stack.get_logical_id(endpoint.endpoint)}]
                        ),
                    }
                ]
            },
        },
    )


def test_grant_describe_reads_this_endpoint_and_its_components_only(
    components: tuple[Template, InferenceComponentEndpoint, iam.Role],
) -> None:
    template, endpoint, _ = components
    stack = endpoint.endpoint.stack
    reader = stack.node.find_child("Reader")
    (policy,) = [
        p
        for p in template.find_resources("AWS::IAM::Policy").values()
        if p["Properties"]["Roles"] == [{"Ref": stack.get_logical_id(reader.node.default_child)}]
    ]
    granted = {s["Action"]: s["Resource"] for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    component_arns = [
        {"Fn::GetAtt": [stack.get_logical_id(endpoint.models[name].component), "InferenceComponentArn"]}
        for name in ("hot", "warm")
    ]
    assert granted == {
        "sagemaker:DescribeEndpoint": {"Ref": stack.get_logical_id(endpoint.endpoint)},
        "sagemaker:DescribeInferenceComponent": component_arns,
    }


def test_with_autoscaling_off_the_components_keep_their_copies_unscaled() -> None:
    stack = bare_stack()
    entries = dedicated_entries(HYBRID)
    endpoint = InferenceComponentEndpoint(
        stack,
        "Dedicated",
        name="team-ic",
        store=ModelStore(stack, "Store", ModelStoreProps()),
        image=TritonImage(stack, "Image", tag="25.04-py3"),
        environment={},
        entries=entries,
        artifact_urls={entry.name: "s3://bucket/models/a.tar.gz" for entry in entries},
        instance_type="ml.g5.xlarge",
        instances=component_instances(HYBRID),
        scaling=ScalingSettings(autoscaling=False),
    )
    template = Template.from_stack(stack)
    assert all(model.scaling is None for model in endpoint.models.values())
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 0)
    template.resource_count_is("AWS::SageMaker::InferenceComponent", 2)


# ----- the archive lookup -------------------------------------------------------------------------------
MANIFEST = {
    "archives": [
        {"name": "hot", "format": "onnx", "target_model": "hot-onnx-0123456789abcdef.tar.gz"},
        {"name": "hot", "format": "torchscript", "target_model": "hot-torchscript-fedcba9876543210.tar.gz"},
    ]
}


def test_the_lookup_answers_each_dedicated_models_archive_url() -> None:
    urls = handler.archive_urls(
        MANIFEST,
        [{"Name": "hot", "Format": "torchscript", "Attribute": "Archive0"}],
        bucket="b",
        prefix="models/",
    )
    assert urls == {"Archive0": "s3://b/models/hot-torchscript-fedcba9876543210.tar.gz"}


def test_a_model_the_build_did_not_make_fails_the_deployment_in_one_line() -> None:
    with pytest.raises(handler.ArchiveMissing, match=r"^the build's manifest names no onnx archive of model "
                       r"'warm', .*; built: hot \(onnx\), hot \(torchscript\)$"):  # fmt: skip
        wanted = [{"Name": "warm", "Format": "onnx", "Attribute": "Archive0"}]
        handler.archive_urls(MANIFEST, wanted, bucket="b", prefix="models/")


def test_a_new_build_is_a_new_lookup_and_its_delete_does_nothing() -> None:
    # The physical id is the manifest's location; a Delete reads nothing (no S3 client is given here).
    event = {
        "RequestType": "Delete",
        "ResourceProperties": {"Bucket": "b", "BuildManifestKey": "manifests/x"},
    }
    assert handler.on_event(event) == {"PhysicalResourceId": "s3://b/manifests/x"}


def test_the_construct_refuses_what_cannot_deploy_before_it_adds_anything(tmp_path: Path) -> None:
    from triton_mme_cdk import EndpointSettings, SettingsError, TritonMultiModelEndpoint, load_build_catalog
    from triton_mme_cdk import TritonMultiModelEndpointProps as Props

    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": [dedicated("hot")]}))
    catalog, files = load_build_catalog(path)
    stack = bare_stack()
    on_p3 = EndpointSettings(instance_type="ml.p3.2xlarge", triton_image_tag="24.05-py3")
    with pytest.raises(
        SettingsError, match=r"^models 'hot' have placement: dedicated, but endpoint\.instance_type=ml\.p3"
    ):
        TritonMultiModelEndpoint(stack, "Models", Props(catalog=catalog, catalog_files=files, endpoint=on_p3))
    assert not [child for child in stack.node.find_all() if isinstance(child, cdk.CfnResource)]

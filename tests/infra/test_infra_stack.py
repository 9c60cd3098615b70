"""Fine-grained assertions on the synthesized template: every construct and every setting."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import CfnElement
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk.assertions import Annotations, Match
from constructs import IConstruct
from synth_support import Synthesized

from triton_mme.core.platform import registry_accounts

KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
SynthWith = Callable[..., Synthesized]


def lid(synth: Synthesized, construct: IConstruct) -> str:
    """The logical id of a construct's CloudFormation resource (its default child for L2s)."""
    element = construct.node.default_child or construct
    assert isinstance(element, CfnElement)
    return str(synth.stack.resolve(synth.stack.get_logical_id(element)))


def resource(synth: Synthesized, construct: IConstruct) -> dict[str, Any]:
    return synth.resources[lid(synth, construct)]


def model_bucket_id(synth: Synthesized) -> str:
    return lid(synth, synth.stack.store.bucket)


def access_log_bucket_id(synth: Synthesized) -> str:
    return lid(synth, synth.stack.store.access_log_bucket)


def statements_of(synth: Synthesized) -> list[dict[str, Any]]:
    policy = resource(synth, synth.stack.endpoint.hosting.policy)
    return list(policy["Properties"]["PolicyDocument"]["Statement"])


# ----- model store ---------------------------------------------------------------------------------


def test_model_bucket_is_private_versioned_logged_and_retained(default_synth: Synthesized) -> None:
    bucket = default_synth.resources[model_bucket_id(default_synth)]
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    assert {"NoncurrentVersionExpiration": {"NoncurrentDays": 30}}.items() <= props["LifecycleConfiguration"][
        "Rules"
    ][0].items()
    assert props["LoggingConfiguration"]["DestinationBucketName"] == {
        "Ref": access_log_bucket_id(default_synth)
    }
    assert bucket["DeletionPolicy"] == bucket["UpdateReplacePolicy"] == "Retain"
    assert "BucketName" not in props


def test_access_log_bucket_is_hardened_and_retained(default_synth: Synthesized) -> None:
    bucket = default_synth.resources[access_log_bucket_id(default_synth)]
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] is True
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ] == {"SSEAlgorithm": "AES256"}
    assert props["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"] == 365
    assert bucket["DeletionPolicy"] == "Retain"


@pytest.mark.parametrize("bucket", ["model", "access_log"])
def test_buckets_deny_requests_without_tls(default_synth: Synthesized, bucket: str) -> None:
    bucket_id = model_bucket_id(default_synth) if bucket == "model" else access_log_bucket_id(default_synth)
    default_synth.template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": bucket_id},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Action": "s3:*",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            },
        },
    )


def test_kms_key_encrypts_the_model_bucket(synth_with: SynthWith) -> None:
    synth = synth_with(kms_key_arn=KEY_ARN)
    props = synth.resources[model_bucket_id(synth)]["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {
            "BucketKeyEnabled": True,
            "ServerSideEncryptionByDefault": {"KMSMasterKeyID": KEY_ARN, "SSEAlgorithm": "aws:kms"},
        }
    ]


def test_store_exposes_bucket_and_prefixes_for_other_constructs(default_synth: Synthesized) -> None:
    store = default_synth.stack.store
    assert (store.model_prefix, store.manifest_prefix) == ("models/", "manifests/")
    assert default_synth.stack.resolve(store.model_prefix_url) == {
        "Fn::Join": ["", ["s3://", {"Ref": model_bucket_id(default_synth)}, "/models/"]]
    }


# ----- hosting role ----------------------------------------------------------------------------------


def test_hosting_role_is_assumed_by_sagemaker_only_and_has_no_managed_policies(
    default_synth: Synthesized,
) -> None:
    role = resource(default_synth, default_synth.stack.endpoint.hosting.role)
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}}
    ]
    assert "ManagedPolicyArns" not in role["Properties"]
    assert "Policies" not in role["Properties"]
    policy = resource(default_synth, default_synth.stack.endpoint.hosting.policy)
    assert policy["Properties"]["Roles"] == [
        {"Ref": lid(default_synth, default_synth.stack.endpoint.hosting.role)}
    ]


def test_hosting_policy_is_least_privilege(default_synth: Synthesized) -> None:
    bucket_arn = {"Fn::GetAtt": [model_bucket_id(default_synth), "Arn"]}
    mapping_id = lid(default_synth, default_synth.stack.image.mapping)
    log_groups = [
        "arn:",
        {"Ref": "AWS::Partition"},
        ":logs:",
        {"Ref": "AWS::Region"},
        ":",
        {"Ref": "AWS::AccountId"},
        ":log-group:/aws/sagemaker/Endpoints/*",
    ]
    assert statements_of(default_synth) == [
        {
            "Action": "s3:GetObject",
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", [bucket_arn, "/models/*"]]},
        },
        {
            "Action": "s3:ListBucket",
            "Condition": {"StringLike": {"s3:prefix": ["models/*"]}},
            "Effect": "Allow",
            "Resource": bucket_arn,
        },
        {
            "Action": ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Effect": "Allow",
            "Resource": {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":ecr:",
                        {"Ref": "AWS::Region"},
                        ":",
                        {"Fn::FindInMap": [mapping_id, {"Ref": "AWS::Region"}, "account"]},
                        ":repository/sagemaker-tritonserver",
                    ],
                ]
            },
        },
        {"Action": "ecr:GetAuthorizationToken", "Effect": "Allow", "Resource": "*"},
        {
            "Action": [
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:DescribeLogStreams",
                "logs:PutLogEvents",
            ],
            "Effect": "Allow",
            "Resource": [
                {"Fn::Join": ["", log_groups]},
                {"Fn::Join": ["", [*log_groups[:-1], log_groups[-1] + ":log-stream:*"]]},
            ],
        },
        {
            "Action": "cloudwatch:PutMetricData",
            "Condition": {"StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/Endpoints"}},
            "Effect": "Allow",
            "Resource": "*",
        },
    ]


def test_hosting_policy_may_decrypt_with_the_given_key_only(
    synth_with: SynthWith, default_synth: Synthesized
) -> None:
    assert {"Action": "kms:Decrypt", "Effect": "Allow", "Resource": KEY_ARN} in statements_of(
        synth_with(kms_key_arn=KEY_ARN)
    )
    assert not [s for s in statements_of(default_synth) if str(s["Action"]).startswith("kms:")]


# ----- image and model ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tag", ["25.04-py3", "25.09-py3", "24.09-py3"])
def test_image_mapping_covers_every_region_of_the_tag(synth_with: SynthWith, tag: str) -> None:
    synth = synth_with(triton_image_tag=tag)
    mapping = synth.template.to_json()["Mappings"][lid(synth, synth.stack.image.mapping)]
    assert mapping == {region: {"account": account} for region, account in registry_accounts(tag).items()}
    model = resource(synth, synth.stack.endpoint.model)
    image = model["Properties"]["PrimaryContainer"]["Image"]["Fn::Join"][1]
    assert image[1:] == [
        ".dkr.ecr.",
        {"Ref": "AWS::Region"},
        ".",
        {"Ref": "AWS::URLSuffix"},
        f"/sagemaker-tritonserver:{tag}",
    ]


def test_registry_table_matches_the_published_accounts() -> None:
    accounts = registry_accounts("25.04-py3")
    assert accounts["us-east-1"] == accounts["eu-west-1"] == "763104351884"
    assert accounts["af-south-1"] == "626614931356"
    assert accounts["cn-north-1"] == "727897471807"
    assert "cn-north-1" not in registry_accounts("25.09-py3")
    assert "ap-southeast-6" in registry_accounts("26.05-py3")


def test_model_is_a_triton_multi_model_container_reading_the_models_prefix(
    default_synth: Synthesized,
) -> None:
    model = resource(default_synth, default_synth.stack.endpoint.model)
    props = model["Properties"]
    container = props["PrimaryContainer"]
    assert container["Mode"] == "MultiModel"
    assert container["ModelDataUrl"] == {
        "Fn::Join": ["", ["s3://", {"Ref": model_bucket_id(default_synth)}, "/models/"]]
    }
    assert container["Environment"] == {"SAGEMAKER_TRITON_LOG_VERBOSE": "0"}
    role_id = lid(default_synth, default_synth.stack.endpoint.hosting.role)
    assert props["ExecutionRoleArn"] == {"Fn::GetAtt": [role_id, "Arn"]}
    assert "ModelName" not in props
    assert isinstance(default_synth.stack.endpoint.model, sagemaker.CfnModel)


def test_model_is_created_after_the_role_policy(default_synth: Synthesized) -> None:
    model = resource(default_synth, default_synth.stack.endpoint.model)
    assert lid(default_synth, default_synth.stack.endpoint.hosting.policy) in model["DependsOn"]


# ----- endpoint config and endpoint --------------------------------------------------------------------


def test_endpoint_config_has_one_unnamed_variant_from_settings(synth_with: SynthWith) -> None:
    synth = synth_with(instance_type="ml.g4dn.2xlarge", initial_instance_count=3, max_instance_count=6)
    config = resource(synth, synth.stack.endpoint.endpoint_config)
    assert config["Properties"]["ProductionVariants"] == [
        {
            "InitialInstanceCount": 3,
            "InitialVariantWeight": 1,
            "InstanceType": "ml.g4dn.2xlarge",
            "ModelName": {"Fn::GetAtt": [lid(synth, synth.stack.endpoint.model), "ModelName"]},
            "VariantName": "AllTraffic",
        }
    ]
    assert "EndpointConfigName" not in config["Properties"]
    assert "KmsKeyId" not in config["Properties"]


def test_endpoint_keeps_autoscaled_capacity_and_has_no_physical_name(default_synth: Synthesized) -> None:
    endpoint = resource(default_synth, default_synth.stack.endpoint.endpoint)
    config_id = lid(default_synth, default_synth.stack.endpoint.endpoint_config)
    assert endpoint["Properties"] == {
        "EndpointConfigName": {"Fn::GetAtt": [config_id, "EndpointConfigName"]},
        "RetainAllVariantProperties": True,
    }


def test_volume_key_is_set_where_the_instance_type_accepts_one(synth_with: SynthWith) -> None:
    synth = synth_with(kms_key_arn=KEY_ARN, instance_type="ml.p3.2xlarge")
    config = resource(synth, synth.stack.endpoint.endpoint_config)
    assert config["Properties"]["KmsKeyId"] == KEY_ARN
    assert not _warnings(synth)


def test_volume_key_is_left_off_with_a_warning_on_nvme_types(synth_with: SynthWith) -> None:
    synth = synth_with(kms_key_arn=KEY_ARN, instance_type="ml.g5.2xlarge")
    config = resource(synth, synth.stack.endpoint.endpoint_config)
    assert "KmsKeyId" not in config["Properties"]
    (warning,) = _warnings(synth)
    assert "ml.g5.2xlarge has local NVMe instance storage" in warning


def test_no_warning_without_a_key(default_synth: Synthesized) -> None:
    assert not _warnings(default_synth)


def _warnings(synth: Synthesized) -> list[str]:
    messages = Annotations.from_stack(synth.stack).find_warning("*", Match.string_like_regexp("kmsKeyArn"))
    return [str(message.entry.data) for message in messages]


# ----- autoscaling ---------------------------------------------------------------------------------------


def test_scalable_target_follows_the_endpoint_variant(synth_with: SynthWith) -> None:
    synth = synth_with(min_instance_count=2, initial_instance_count=3, max_instance_count=8)
    target = resource(synth, synth.stack.autoscaling.target)
    props = target["Properties"]
    assert (props["MinCapacity"], props["MaxCapacity"]) == (2, 8)
    assert props["ServiceNamespace"] == "sagemaker"
    assert props["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount"
    # A GetAtt on the endpoint: CloudFormation creates the target after it and deletes it first.
    endpoint_id = lid(synth, synth.stack.endpoint.endpoint)
    assert props["ResourceId"] == {
        "Fn::Join": ["", ["endpoint/", {"Fn::GetAtt": [endpoint_id, "EndpointName"]}, "/variant/AllTraffic"]]
    }
    assert props["RoleARN"]["Fn::Join"][1][-1].endswith(
        ":role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/"
        "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"
    )


def test_gpu_policy_tracks_gpu_utilization_of_this_endpoint_variant(synth_with: SynthWith) -> None:
    synth = synth_with(
        gpu_utilization_target=72.5, scale_in_cooldown_seconds=900, scale_out_cooldown_seconds=120
    )
    policy = resource(synth, synth.stack.autoscaling.gpu_policy)
    endpoint_id = lid(synth, synth.stack.endpoint.endpoint)
    assert policy["Properties"]["PolicyType"] == "TargetTrackingScaling"
    assert policy["Properties"]["ScalingTargetId"] == {"Ref": lid(synth, synth.stack.autoscaling.target)}
    assert policy["Properties"]["TargetTrackingScalingPolicyConfiguration"] == {
        "CustomizedMetricSpecification": {
            "MetricName": "GPUUtilization",
            "Namespace": "/aws/sagemaker/Endpoints",
            "Dimensions": [
                {"Name": "EndpointName", "Value": {"Fn::GetAtt": [endpoint_id, "EndpointName"]}},
                {"Name": "VariantName", "Value": "AllTraffic"},
            ],
            "Statistic": "Average",
            "Unit": "Percent",
        },
        "TargetValue": 72.5,
        "ScaleInCooldown": 900,
        "ScaleOutCooldown": 120,
    }


def test_default_scaling_numbers(default_synth: Synthesized) -> None:
    target = resource(default_synth, default_synth.stack.autoscaling.target)
    assert (target["Properties"]["MinCapacity"], target["Properties"]["MaxCapacity"]) == (1, 5)
    policy = resource(default_synth, default_synth.stack.autoscaling.gpu_policy)
    config = policy["Properties"]["TargetTrackingScalingPolicyConfiguration"]
    assert (config["TargetValue"], config["ScaleInCooldown"], config["ScaleOutCooldown"]) == (60, 600, 200)


def test_invocations_policy_is_added_only_when_asked(synth_with: SynthWith) -> None:
    synth = synth_with(invocations_per_instance_target=900)
    policy = synth.stack.autoscaling.invocations_policy
    assert policy is not None
    props = resource(synth, policy)["Properties"]
    assert props["ScalingTargetId"] == {"Ref": lid(synth, synth.stack.autoscaling.target)}
    assert props["TargetTrackingScalingPolicyConfiguration"] == {
        "PredefinedMetricSpecification": {"PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"},
        "TargetValue": 900,
        "ScaleInCooldown": 600,
        "ScaleOutCooldown": 200,
    }


def test_no_invocations_policy_by_default(default_synth: Synthesized) -> None:
    assert default_synth.stack.autoscaling.invocations_policy is None
    scaling_policies = default_synth.template.find_resources("AWS::ApplicationAutoScaling::ScalingPolicy")
    assert list(scaling_policies) == [lid(default_synth, default_synth.stack.autoscaling.gpu_policy)]


def test_scaling_uses_the_service_linked_role_not_a_new_one(default_synth: Synthesized) -> None:
    created_roles = [c for c in default_synth.stack.autoscaling.node.find_all() if isinstance(c, iam.CfnRole)]
    assert created_roles == []


# ----- outputs, environment, exposed attributes -----------------------------------------------------------


def test_outputs_name_the_endpoint_bucket_and_model_prefix(default_synth: Synthesized) -> None:
    outputs = default_synth.template.to_json()["Outputs"]
    bucket_id = model_bucket_id(default_synth)
    assert outputs["EndpointName"]["Value"] == {
        "Fn::GetAtt": [lid(default_synth, default_synth.stack.endpoint.endpoint), "EndpointName"]
    }
    assert outputs["ModelBucketName"]["Value"] == {"Ref": bucket_id}
    assert outputs["ModelPrefixUrl"]["Value"] == {"Fn::Join": ["", ["s3://", {"Ref": bucket_id}, "/models/"]]}


def test_stack_is_environment_agnostic_unless_a_region_is_given(
    default_synth: Synthesized, synth_with: SynthWith
) -> None:
    assert default_synth.stack.resolve(default_synth.stack.region) == {"Ref": "AWS::Region"}
    pinned = synth_with(region="eu-west-1")
    assert pinned.stack.region == "eu-west-1"
    assert pinned.template.to_json()["Mappings"], "the image mapping stays in a region-pinned template"


def test_endpoint_names_are_exposed_for_metrics(default_synth: Synthesized) -> None:
    endpoint = default_synth.stack.endpoint
    assert endpoint.variant_name == "AllTraffic"
    assert default_synth.stack.resolve(endpoint.endpoint_name) == {
        "Fn::GetAtt": [lid(default_synth, default_synth.stack.endpoint.endpoint), "EndpointName"]
    }
    assert default_synth.stack.settings.instance_type == "ml.g5.xlarge"

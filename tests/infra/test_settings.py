"""Settings: the dataclass holds every default, `-c` strings are parsed, every bad value is one clear line.

The rules against the platform table (GPU, driver, region) have their own file, test_platform_rules.py."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from synth_support import CDK_JSON_CONTEXT, KEY_ARN

from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.settings import CONTEXT_KEYS, Settings, SettingsError


def test_cdk_json_holds_feature_flags_only_so_the_dataclass_is_the_one_place_for_defaults() -> None:
    assert not set(CONTEXT_KEYS) & set(CDK_JSON_CONTEXT)
    assert all(key.startswith("@") for key in CDK_JSON_CONTEXT)
    assert Settings.from_context(CDK_JSON_CONTEXT) == Settings()


def test_defaults_are_the_documented_ones() -> None:
    settings = Settings()
    assert (settings.endpoint.instance_type, settings.scaling.initial_instance_count) == ("ml.g5.xlarge", 2)
    assert (settings.scaling.min_instance_count, settings.scaling.max_instance_count) == (2, 5)
    assert settings.scaling.gpu_utilization_target == 60
    assert (settings.scaling.scale_in_cooldown_seconds, settings.scaling.scale_out_cooldown_seconds) == (
        600,
        200,
    )
    assert settings.scaling.invocations_per_instance_target == 0
    assert settings.endpoint.triton_image_tag == "25.04-py3"
    assert settings.model_catalog == "models.yaml"
    assert settings.kms_key_arn is None and settings.region is None
    assert (
        settings.endpoint.inference_ami_version,
        settings.endpoint.network_isolation,
        settings.scaling.enabled,
    ) == (
        "auto",
        True,
        True,
    )
    assert (settings.endpoint.log_retention_days, settings.build.log_retention_days) == (30, 30)
    # Two queues, the build and the serving check: 5 + 30 + 5 + 15 = 55, five minutes inside the hour.
    assert (
        settings.build.timeout_minutes,
        settings.build.serving_check_timeout_minutes,
        settings.build.queue_timeout_minutes,
    ) == (30, 15, 5)


def test_auto_resolves_to_the_ami_whose_driver_runs_the_default_tag() -> None:
    assert Settings().endpoint.resolved_inference_ami == "al2023-ami-sagemaker-inference-gpu-4-1"
    explicit = Settings(
        triton_image_tag="24.05-py3", inference_ami_version="al2-ami-sagemaker-inference-gpu-3-1"
    )
    assert explicit.endpoint.resolved_inference_ami == "al2-ami-sagemaker-inference-gpu-3-1"


def test_command_line_strings_are_converted() -> None:
    settings = Settings.from_context(
        {
            "instanceType": "ml.p3.2xlarge",
            "inferenceAmiVersion": "al2-ami-sagemaker-inference-gpu-3-1",
            "networkIsolation": "false",
            "autoscaling": "FALSE",
            "endpointLogRetentionDays": "90",
            "buildTimeoutMinutes": "20",
            "servingCheckTimeoutMinutes": "10",
            "buildQueueTimeoutMinutes": "10",
            "initialInstanceCount": "3",
            "minInstanceCount": " 2 ",
            "maxInstanceCount": "8",
            "gpuUtilizationTarget": "75.5",
            "invocationsPerInstanceTarget": "900",
            "scaleInCooldownSeconds": "300",
            "scaleOutCooldownSeconds": "60",
            "tritonImageTag": "24.05-py3",
            "region": "eu-west-1",
            "kmsKeyArn": KEY_ARN,
        }
    )
    assert settings == Settings(
        instance_type="ml.p3.2xlarge",
        inference_ami_version="al2-ami-sagemaker-inference-gpu-3-1",
        network_isolation=False,
        autoscaling=False,
        endpoint_log_retention_days=90,
        build_timeout_minutes=20,
        serving_check_timeout_minutes=10,
        build_queue_timeout_minutes=10,
        initial_instance_count=3,
        min_instance_count=2,
        max_instance_count=8,
        gpu_utilization_target=75.5,
        invocations_per_instance_target=900,
        scale_in_cooldown_seconds=300,
        scale_out_cooldown_seconds=60,
        triton_image_tag="24.05-py3",
        region="eu-west-1",
        kms_key_arn=KEY_ARN,
    )


def test_json_booleans_from_cdk_json_are_taken_as_they_are() -> None:
    assert (
        Settings.from_context({"networkIsolation": False, "autoscaling": True}).endpoint.network_isolation
        is False
    )


def test_empty_values_mean_the_default() -> None:
    assert Settings.from_context({"kmsKeyArn": "", "region": None, "instanceType": ""}) == Settings()


def test_settings_are_frozen() -> None:
    with pytest.raises(ValidationError, match="frozen"):
        Settings().endpoint.instance_type = "ml.g4dn.xlarge"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        Settings().stack_name = "Other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("instance_type", "accepts_key"),
    [("ml.g5.xlarge", False), ("ml.g4dn.16xlarge", False), ("ml.p3.2xlarge", True)],
)
def test_only_types_without_instance_storage_take_a_volume_key(instance_type: str, accepts_key: bool) -> None:
    settings = Settings(instance_type=instance_type, triton_image_tag="24.05-py3")
    assert settings.endpoint.volume_accepts_kms_key is accepts_key


def test_every_documented_gpu_mme_type_is_known_and_the_modern_ones_take_the_default_tag() -> None:
    for instance_type in PLATFORM.gpu_instance_types:
        if instance_type.startswith(("ml.g4dn.", "ml.g5.")):
            assert Settings(instance_type=instance_type).endpoint.instance_type == instance_type
        else:  # V100 and K80 are too old for 25.xx images (test_platform_rules.py)
            with pytest.raises(SettingsError, match=f"instanceType={instance_type} has a"):
                Settings(instance_type=instance_type)


REJECTED: list[tuple[dict[str, Any], str]] = [
    # Instance types: multi-GPU sizes, CPU types and undocumented GPU families.
    (
        {"instanceType": "ml.g4dn.12xlarge"},
        r"^instanceType=ml\.g4dn\.12xlarge is not a single-GPU type .*allowed: ml\.g4dn\.xlarge, ",
    ),
    (
        {"instanceType": "ml.g5.12xlarge"},
        r"^instanceType=ml\.g5\.12xlarge is not a single-GPU type",
    ),
    (
        {"instanceType": "ml.m5.xlarge"},
        r"^instanceType=ml\.m5\.xlarge is not a single-GPU type .*ml\.p2\.xlarge$",
    ),
    (
        {"instanceType": "ml.g6.xlarge"},
        r"^instanceType=ml\.g6\.xlarge is not a single-GPU type",
    ),
    (
        {"instanceType": 5},
        r"^instanceType=5 is not text",
    ),
    # Instance counts.
    (
        {"minInstanceCount": "3"},
        r"^minInstanceCount=3 does not fit initialInstanceCount=2 \(the default\), maxInstanceCount=5 "
        r"\(the default\); allowed: minInstanceCount <= initialInstanceCount <= maxInstanceCount$",
    ),
    (
        {"initialInstanceCount": "6"},
        r"^initialInstanceCount=6 does not fit minInstanceCount=2 \(the default\), maxInstanceCount=5 "
        r"\(the default\); allowed: minInstanceCount <= initialInstanceCount <= maxInstanceCount$",
    ),
    # A maximum below the default minimum is blamed on the maximum the user set, not on a default.
    (
        {"maxInstanceCount": "1"},
        r"^maxInstanceCount=1 does not fit minInstanceCount=2 \(the default\), initialInstanceCount=2 "
        r"\(the default\); allowed",
    ),
    (
        {"minInstanceCount": "0"},
        r"^minInstanceCount=0 is out of range; allowed: 1\.\.100$",
    ),
    (
        {"minInstanceCount": "-1"},
        r"^minInstanceCount=-1 is out of range; allowed: 1\.\.100$",
    ),
    (
        {"maxInstanceCount": "500"},
        r"^maxInstanceCount=500 is out of range; allowed: 1\.\.100$",
    ),
    # Target utilization outside (0, 100].
    (
        {"gpuUtilizationTarget": "0"},
        r"^gpuUtilizationTarget=0 is out of range; allowed: \(0, 100\]$",
    ),
    (
        {"gpuUtilizationTarget": "-5"},
        r"^gpuUtilizationTarget=-5 is out of range; allowed: \(0, 100\]$",
    ),
    (
        {"gpuUtilizationTarget": "100.5"},
        r"^gpuUtilizationTarget=100\.5 is out of range; allowed: \(0, 100\]$",
    ),
    (
        {"gpuUtilizationTarget": "nan"},
        r"^gpuUtilizationTarget=nan is not a finite number",
    ),
    (
        {"gpuUtilizationTarget": "inf"},
        r"^gpuUtilizationTarget=inf is not a finite number",
    ),
    # Non-numeric numbers.
    (
        {"initialInstanceCount": "two"},
        r"^initialInstanceCount=two is not a whole number; allowed: an integer",
    ),
    (
        {"initialInstanceCount": "2.5"},
        r"^initialInstanceCount=2\.5 is not a whole number",
    ),
    (
        {"maxInstanceCount": True},
        r"^maxInstanceCount=True is not a whole number",
    ),
    (
        {"gpuUtilizationTarget": "sixty"},
        r"^gpuUtilizationTarget=sixty is not a number; allowed: a number",
    ),
    (
        {"scaleInCooldownSeconds": "10m"},
        r"^scaleInCooldownSeconds=10m is not a whole number",
    ),
    (
        {"scaleOutCooldownSeconds": "-1"},
        r"^scaleOutCooldownSeconds=-1 is out of range; allowed: 0\.\.86400 seconds$",
    ),
    (
        {"invocationsPerInstanceTarget": "-1"},
        r"^invocationsPerInstanceTarget=-1 is negative; allowed: 0 ",
    ),
    # Unknown image tags and regions without the image.
    (
        {"tritonImageTag": "23.10-py3"},
        r"^tritonImageTag=23\.10-py3 is not a known SageMaker Triton image tag; allowed: 23\.12-py3, ",
    ),
    (
        {"tritonImageTag": "25.04"},
        r"^tritonImageTag=25\.04 is not a known SageMaker Triton image tag",
    ),
    (
        {"region": "mars-north"},
        r"^region=mars-north is not an AWS region name",
    ),
    # Malformed or misplaced KMS keys.
    (
        {"kmsKeyArn": "alias/models"},
        r"^kmsKeyArn=alias/models is not a KMS key ARN; allowed: arn:aws:kms:<region>:.*:key/<key id>$",
    ),
    (
        {"kmsKeyArn": "arn:aws:kms:eu-west-1:123456789012:alias/models"},
        r"^kmsKeyArn=\S+ is not a KMS key ARN",
    ),
    (
        {"kmsKeyArn": KEY_ARN.replace("123456789012", "1234")},
        r"is not a KMS key ARN",
    ),
    (
        {"kmsKeyArn": KEY_ARN, "region": "us-east-1"},
        r"^kmsKeyArn=\S+ is not in the stack's region; allowed: a key in us-east-1$",
    ),
    (
        {"stackName": "1-stack"},
        r"^stackName=1-stack is not a valid stack name",
    ),
    (
        {"stackName": "a" * 64},
        r"^stackName=a{64} also names the endpoint, and is not a SageMaker endpoint name; allowed: at most",
    ),
    (
        {"stackName": "triton-"},
        r"^stackName=triton- also names the endpoint, .* not ending with a hyphen$",
    ),
    # The new switches and retentions.
    (
        {"networkIsolation": "yes"},
        r"^networkIsolation=yes is not true or false; allowed: true, false$",
    ),
    (
        {"autoscaling": 1},
        r"^autoscaling=1 is not true or false; allowed: true, false$",
    ),
    (
        {"endpointLogRetentionDays": "45"},
        r"^endpointLogRetentionDays=45 is not a log retention; allowed: 1, 3, 5, 7, 14, 30, ",
    ),
]


@pytest.mark.parametrize(("context", "message"), REJECTED, ids=[str(c) for c, _ in REJECTED])
def test_invalid_settings_are_rejected_in_one_line(context: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingsError, match=message) as caught:
        Settings.from_context(context)
    assert "\n" not in str(caught.value)


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(SettingsError, match=r"^maxInstanceCount=0 is out of range"):
        Settings(max_instance_count=0)


# --- Settings: the alarm thresholds and the optional email address -------------------------------


def test_alarm_settings_parse_from_command_line_strings() -> None:
    settings = Settings.from_context(
        {
            "alarmEmail": " ops@example.com ",
            "alarm5xxErrorsPerMinute": "3",
            "alarmGpuMemoryPercent": "85.5",
            "alarmDiskPercent": "70",
            "alarmModelLoadingWaitMs": "2500",
            "alarmCacheHitPercent": "95",
            "alarmEvaluationMinutes": "10",
            "alarmDatapointsToAlarm": "10",
        }
    )
    assert settings.alarms.email == "ops@example.com"
    assert (
        settings.alarms.errors_5xx_per_minute,
        settings.alarms.gpu_memory_percent,
        settings.alarms.disk_percent,
        settings.alarms.model_loading_wait_ms,
        settings.alarms.cache_hit_percent,
        settings.alarms.evaluation_minutes,
        settings.alarms.datapoints_to_alarm,
    ) == (3, 85.5, 70, 2500, 95, 10, 10)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"alarmEmail": "ops"}, "alarmEmail=ops is not an email address; allowed: e.g. ops@example.com"),
        ({"alarmEmail": "ops@example"}, "alarmEmail=ops@example is not an email address"),
        ({"alarmEmail": "ops team@example.com"}, "alarmEmail=ops team@example.com is not an email address"),
        ({"alarm5xxErrorsPerMinute": "0"}, "alarm5xxErrorsPerMinute=0 is out of range; allowed: 1 or more"),
        (
            {"alarmThrashEvictionsPerMinute": "0"},
            "alarmThrashEvictionsPerMinute=0 is out of range; allowed: 1 or more evictions a minute",
        ),
        ({"alarmGpuMemoryPercent": "0"}, r"alarmGpuMemoryPercent=0 is out of range; allowed: \(0, 100\]"),
        ({"alarmDiskPercent": "101"}, r"alarmDiskPercent=101 is out of range; allowed: \(0, 100\]"),
        ({"alarmCacheHitPercent": "-5"}, r"alarmCacheHitPercent=-5 is out of range"),
        ({"alarmGpuMemoryPercent": "high"}, "alarmGpuMemoryPercent=high is not a number"),
        (
            {"alarmModelLoadingWaitMs": "0"},
            "alarmModelLoadingWaitMs=0 is out of range; allowed: 1..3600000 milliseconds",
        ),
        ({"alarmModelLoadingWaitMs": "1.5"}, "alarmModelLoadingWaitMs=1.5 is not a whole number"),
        (
            {"alarmEvaluationMinutes": "1441"},
            "alarmEvaluationMinutes=1441 is out of range; allowed: 1..1440 minutes",
        ),
        (
            {"alarmDatapointsToAlarm": "6"},
            r"alarmDatapointsToAlarm=6 is out of range; allowed: 1..alarmEvaluationMinutes \(5\)",
        ),
        ({"alarmDatapointsToAlarm": "0"}, "alarmDatapointsToAlarm=0 is out of range"),
    ],
)
def test_bad_alarm_settings_are_one_clear_line(context: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=f"^{message}") as error:
        Settings.from_context(context)
    assert "\n" not in str(error.value)


def test_the_v100_runner_is_refused_in_one_line() -> None:
    with pytest.raises(SettingsError) as error:
        Settings(builder_compute_type="LARGE")
    assert str(error.value) == (
        "builderComputeType=LARGE builds on V100 (compute capability 7.0), which the build image "
        "pytorch-training:2.8.0-gpu-py312-cu129-ubuntu22.04-ec2 (PyTorch 2.8.0, CUDA 12.9) for "
        "tritonImageTag=25.04-py3 does not support (7.5+); allowed: builderComputeType=SMALL"
    )


def test_an_unconfirmed_build_region_is_an_explicit_opt_in() -> None:
    with pytest.raises(SettingsError, match=r"^region=eu-west-2 has no confirmed CodeBuild GPU runners; .*"):
        Settings(region="eu-west-2")
    settings = Settings.from_context({"region": "eu-west-2", "allowUnconfirmedBuildRegion": "true"})
    assert settings.allow_unconfirmed_build_region and settings.region == "eu-west-2"

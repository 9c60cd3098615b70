"""The settings' rules against the platform table: GPU generation, inference AMI (driver) and region.

Each rule is tested accepting and refusing, with its one-line message naming the cdk.json keys, the values
and what is allowed."""

from __future__ import annotations

from typing import Any

import pytest

from triton_mme.core import platform
from triton_mme.core.platform import (
    PLATFORM,
    build_image,
)
from triton_mme_cdk.settings import Settings, SettingsError
from triton_mme_cdk.settings.platform_rules import (
    build_gpu_problem,
    compute_capability_problem,
    inference_ami_problem,
    instance_patterns,
    region_problem,
    resolve_inference_ami,
)

GPU_4_1 = "al2023-ami-sagemaker-inference-gpu-4-1"
GPU_3_1 = "al2-ami-sagemaker-inference-gpu-3-1"
GPU_2 = "al2-ami-sagemaker-inference-gpu-2"


def test_instance_patterns_shorten_whole_families_only() -> None:
    g5 = [name for name in PLATFORM.gpu_instance_types if name.startswith("ml.g5.")]
    assert instance_patterns([*g5, "ml.p3.2xlarge"]) == "ml.g5.*, ml.p3.2xlarge"
    assert instance_patterns(["ml.g4dn.xlarge", "ml.g4dn.2xlarge"]) == "ml.g4dn.xlarge, ml.g4dn.2xlarge"


# --- compute capability ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "instance_type"),
    [("25.04-py3", "ml.g4dn.xlarge"), ("25.09-py3", "ml.g5.16xlarge"), ("24.05-py3", "ml.p3.2xlarge")],
)
def test_gpus_the_image_supports_are_accepted(tag: str, instance_type: str) -> None:
    assert compute_capability_problem(tag, instance_type) is None


def test_a_v100_is_refused_for_25_xx_images_with_the_newer_types_and_the_older_tags() -> None:
    assert compute_capability_problem("25.04-py3", "ml.p3.2xlarge") == (
        "tritonImageTag=25.04-py3 needs a GPU of compute capability 7.5 or newer, but "
        "instanceType=ml.p3.2xlarge has a V100 (7.0); allowed: an instanceType with 7.5+ "
        "(ml.g4dn.*, ml.g5.*), or a tritonImageTag that supports 7.0 "
        "(23.12-py3, 24.01-py3, 24.03-py3, 24.05-py3, 24.09-py3)"
    )


def test_a_k80_is_refused_for_every_tag() -> None:
    for tag in PLATFORM.triton_images:
        problem = compute_capability_problem(tag, "ml.p2.xlarge")
        assert problem is not None and "instanceType=ml.p2.xlarge has a K80 (3.7)" in problem
        assert "a tritonImageTag that supports" not in problem


# --- inference AMI -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "instance_type", "chosen"),
    [
        ("25.04-py3", "ml.g5.xlarge", GPU_4_1),
        ("25.09-py3", "ml.g4dn.xlarge", GPU_4_1),
        ("24.05-py3", "ml.p3.2xlarge", GPU_3_1),
        ("23.12-py3", "ml.p3.2xlarge", GPU_3_1),
    ],
)
def test_auto_picks_the_newest_ami_whose_driver_runs_the_tag_natively(
    tag: str, instance_type: str, chosen: str
) -> None:
    assert inference_ami_problem(tag, instance_type, "auto") is None
    assert resolve_inference_ami(tag, instance_type, "auto") == chosen


def test_an_explicit_ami_that_serves_the_tag_is_kept() -> None:
    assert inference_ami_problem("24.05-py3", "ml.g5.xlarge", GPU_3_1) is None
    assert resolve_inference_ami("24.05-py3", "ml.g5.xlarge", GPU_3_1) == GPU_3_1


def test_an_explicit_ami_with_a_too_old_driver_is_refused_naming_the_ones_that_work() -> None:
    assert inference_ami_problem("25.04-py3", "ml.g5.xlarge", GPU_2) == (
        f"inferenceAmiVersion={GPU_2} has NVIDIA driver 535 (CUDA 12.2), which does not run "
        "tritonImageTag=25.04-py3 natively (CUDA 12.9.0 needs driver 575+); allowed with "
        f"instanceType=ml.g5.xlarge: auto, {GPU_4_1}"
    )


def test_an_ami_that_does_not_apply_to_the_instance_type_is_refused() -> None:
    assert inference_ami_problem("24.05-py3", "ml.p3.2xlarge", GPU_4_1) == (
        f"inferenceAmiVersion={GPU_4_1} does not apply to instanceType=ml.p3.2xlarge; allowed: auto, "
        "al2-ami-sagemaker-inference-gpu-3-1, al2-ami-sagemaker-inference-gpu-2-1, "
        "al2-ami-sagemaker-inference-gpu-2"
    )


def test_an_unknown_or_non_gpu_ami_is_refused_with_every_gpu_ami() -> None:
    problem = inference_ami_problem("25.04-py3", "ml.g5.xlarge", "al2-ami-sagemaker-inference-neuron-2")
    assert problem is not None
    assert problem.startswith(
        "inferenceAmiVersion=al2-ami-sagemaker-inference-neuron-2 is not a SageMaker GPU inference AMI; "
        f"allowed: auto, {GPU_4_1}, "
    )


def test_a_tag_no_ami_runs_natively_is_refused_naming_the_tags_that_work() -> None:
    assert inference_ami_problem("24.09-py3", "ml.p3.2xlarge", "auto") == (
        "no SageMaker inference AMI runs tritonImageTag=24.09-py3 natively (CUDA 12.6.1 needs driver 560+) "
        "on instanceType=ml.p3.2xlarge, which offers al2-ami-sagemaker-inference-gpu-3-1 (driver 550), "
        "al2-ami-sagemaker-inference-gpu-2-1 (driver 535), al2-ami-sagemaker-inference-gpu-2 (driver 535); "
        "allowed: a tritonImageTag one of them runs (23.12-py3, 24.01-py3, 24.03-py3, 24.05-py3)"
    )


def test_a_tag_whose_driver_is_unknown_is_refused_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    unknown = PLATFORM.triton_images["26.05-py3"].model_copy(update={"min_driver": None})
    # PLATFORM.triton_images is a read-only view of the module's table.
    monkeypatch.setitem(platform._TRITON_IMAGES, "26.05-py3", unknown)
    problem = inference_ami_problem("26.05-py3", "ml.g5.xlarge", "auto")
    assert problem is not None
    assert "tritonImageTag=26.05-py3 natively (CUDA 13.2, whose driver is not known to ship" in problem
    with pytest.raises(ValueError, match=r"no SageMaker inference AMI runs tritonImageTag=26\.05-py3"):
        resolve_inference_ami("26.05-py3", "ml.g5.xlarge", "auto")


@pytest.mark.parametrize("tag", ["25.12-py3", "26.03-py3", "26.04-py3", "26.05-py3"])
def test_the_cuda_13_tags_run_on_the_al2023_ami_through_minor_version_compatibility(tag: str) -> None:
    # CUDA 13.x needs R580 or later (CUDA Compatibility, "Minor Version Compatibility"): gpu-4-1's 580.
    assert PLATFORM.triton_images[tag].min_driver == 580
    assert resolve_inference_ami(tag, "ml.g5.xlarge", "auto") == "al2023-ami-sagemaker-inference-gpu-4-1"
    assert inference_ami_problem(tag, "ml.g4dn.xlarge", "auto") is None


def test_forward_compatibility_is_never_counted_as_serving() -> None:
    # 25.04's release notes allow R535 through forward compatibility on data-center GPUs, but the SageMaker
    # image is not documented to set it up, and the -2-1/-3-1/-4-1 AMIs do not mount the compat libraries.
    assert 535 in PLATFORM.triton_images["25.04-py3"].forward_compatible_drivers
    assert inference_ami_problem("25.04-py3", "ml.g5.xlarge", "al2-ami-sagemaker-inference-gpu-2-1")


# --- region --------------------------------------------------------------------------------------------


SEVEN = "ap-northeast-1, ap-southeast-2, eu-central-1, eu-west-1, us-east-1, us-east-2, us-west-2"


# The seven regions themselves are pinned in tests/core/test_core_platform.py.
@pytest.mark.parametrize("region", [None, *sorted(PLATFORM.regions.codebuild_gpu_regions.value)])
def test_regions_with_image_registry_and_gpu_runners_are_accepted(region: str | None) -> None:
    assert region_problem(region, "25.04-py3") is None


@pytest.mark.parametrize(
    "region",
    ["ca-central-1", "eu-west-2", "ap-northeast-2", "ap-southeast-1", "cn-north-1", "cn-northwest-1"],
)
def test_regions_only_the_older_codebuild_text_names_need_the_opt_in(region: str) -> None:
    assert region_problem(region, "25.04-py3") == (
        f"region={region} has no confirmed CodeBuild GPU runners; allowed with tritonImageTag=25.04-py3: "
        f"{SEVEN}, or allowUnconfirmedBuildRegion=true (docs/settings-platform.md)"
    )
    assert region_problem(region, "25.04-py3", allow_unconfirmed_build_region=True) is None


@pytest.mark.parametrize(
    ("region", "tag", "message"),
    [
        (
            "eu-north-1",
            "25.04-py3",
            f"region=eu-north-1 has no CodeBuild GPU runners; allowed with tritonImageTag=25.04-py3: {SEVEN}",
        ),
        (
            "cn-north-1",
            "25.09-py3",
            "region=cn-north-1 has no SageMaker Triton image 25.09-py3 and no confirmed CodeBuild GPU "
            f"runners; allowed with tritonImageTag=25.09-py3: {SEVEN}",
        ),
        (
            "ap-southeast-6",
            "25.04-py3",
            "region=ap-southeast-6 has no SageMaker Triton image 25.04-py3 and no CodeBuild GPU runners; "
            "allowed",
        ),
        (
            "us-gov-west-1",
            "25.04-py3",
            "region=us-gov-west-1 has no SageMaker Triton image 25.04-py3 and no Deep Learning Containers "
            "registry for the build image and no CodeBuild GPU runners; allowed",
        ),
    ],
)
def test_regions_missing_something_are_refused_listing_the_regions_that_work(
    region: str, tag: str, message: str
) -> None:
    problem = region_problem(region, tag)
    assert problem is not None and problem.startswith(message)


# --- the rules as the settings apply them -----------------------------------------------------------------


REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"instanceType": "ml.p3.2xlarge"}, r"^tritonImageTag=25\.04-py3 needs a GPU of compute capability 7\.5"),
    (
        {"instanceType": "ml.p2.xlarge", "tritonImageTag": "24.05-py3"},
        r"instanceType=ml\.p2\.xlarge has a K80",
    ),
    ({"inferenceAmiVersion": GPU_2}, rf"^inferenceAmiVersion={GPU_2} has NVIDIA driver 535"),
    ({"inferenceAmiVersion": "latest"}, r"^inferenceAmiVersion=latest is not a SageMaker GPU inference AMI"),
    (
        {"tritonImageTag": "26.03-py3", "instanceType": "ml.p3.2xlarge"},
        r"^tritonImageTag=26\.03-py3 needs a GPU of compute capability 7\.5",
    ),
    ({"region": "sa-east-1"}, r"^region=sa-east-1 has no CodeBuild GPU runners; allowed with"),
    ({"region": "mars-north"}, r"^region=mars-north is not an AWS region name"),
]


@pytest.mark.parametrize(("context", "message"), REFUSED, ids=[str(c) for c, _ in REFUSED])
def test_settings_refuse_in_one_line(context: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingsError, match=message) as caught:
        Settings.from_context(context)
    assert "\n" not in str(caught.value)


def test_settings_accept_an_older_tag_on_a_v100_with_the_ami_that_serves_it() -> None:
    settings = Settings.from_context({"instanceType": "ml.p3.2xlarge", "tritonImageTag": "24.03-py3"})
    assert settings.endpoint.resolved_inference_ami == GPU_3_1


# --- the build runner's GPU against the build image ---------------------------------------------------------


@pytest.mark.parametrize("tag", PLATFORM.triton_images)
def test_the_v100_runner_is_refused_with_every_build_image(tag: str) -> None:
    # PyTorch's CUDA 12.8/12.9 builds dropped Volta; CUDA 13 dropped everything below sm_75.
    image = build_image(tag)
    assert build_gpu_problem("LARGE", tag) == (
        f"builderComputeType=LARGE builds on V100 (compute capability 7.0), which the build image "
        f"{image.repository}:{image.tag} (PyTorch {image.pytorch}, CUDA {image.cuda}) for "
        f"tritonImageTag={tag} does not support (7.5+); allowed: builderComputeType=SMALL"
    )
    assert build_gpu_problem("SMALL", tag) is None


def test_settings_accept_the_tag_with_the_sagemaker_path_traversal_fix() -> None:
    settings = Settings(triton_image_tag="26.03-py3")
    assert settings.endpoint.triton_image_tag == "26.03-py3"
    assert Settings(triton_image_tag="26.03-py3", region="eu-west-1").region == "eu-west-1"

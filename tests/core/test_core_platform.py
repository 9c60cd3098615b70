"""The platform table: its facts agree with each other and with the sources' numbers copied into it."""

from __future__ import annotations

import pytest

from triton_mme.core import platform
from triton_mme.core.platform import (
    BUILD_IMAGES,
    CODEBUILD_GPU_REGIONS,
    CODEBUILD_GPU_REGIONS_UNCONFIRMED,
    CODEBUILD_GPUS,
    DEFAULT_TRITON_TAG,
    DLC_REGIONS,
    GPU_MME_INSTANCE_TYPES,
    INFERENCE_AMIS,
    TRITON_IMAGES,
    deployable_regions,
    endpoint_quota_name,
    gpu_instance,
    hourly_price,
    registry_accounts,
    serving_amis,
    triton_image,
    triton_release_of,
)


def test_registry_accounts_match_the_sdk_table() -> None:
    accounts = registry_accounts("25.04-py3")
    assert accounts["us-east-1"] == accounts["eu-west-1"] == "763104351884"
    assert accounts["af-south-1"] == "626614931356"
    assert accounts["cn-north-1"] == "727897471807"
    assert "cn-north-1" not in registry_accounts("25.09-py3")
    assert "ap-southeast-6" in registry_accounts("26.05-py3")


def test_every_image_is_published_in_deep_learning_containers_registries() -> None:
    for image in TRITON_IMAGES.values():
        assert image.regions <= DLC_REGIONS, image.tag


@pytest.mark.parametrize("image", TRITON_IMAGES.values(), ids=lambda image: image.tag)
def test_image_facts_are_consistent(image: platform.TritonImage) -> None:
    assert image.release == image.tag.removesuffix("-py3")
    assert image.cuda_major in BUILD_IMAGES, "the build runner needs an image for this CUDA"
    assert f"-cu{image.cuda_major}" in BUILD_IMAGES[image.cuda_major].tag
    if image.tensorrt_requirement:
        assert image.tensorrt_requirement.startswith(f"tensorrt-cu{image.cuda_major}==")
        assert image.tensorrt_requirement.split("==")[1].startswith(image.tensorrt or "?")
    # The driver that runs a CUDA natively grows with the CUDA version.
    if image.min_driver is not None:
        assert image.min_driver >= {12: 525, 13: 580}[image.cuda_major]
    assert image.min_compute_capability in (6.0, 7.5)
    assert triton_release_of(image.release) is image
    assert triton_image(image.tag) is image


def test_releases_from_25_xx_dropped_pascal_and_volta() -> None:
    assert {tag for tag, image in TRITON_IMAGES.items() if image.min_compute_capability == 7.5} == {
        "25.04-py3",
        "25.09-py3",
        "26.05-py3",
    }


def test_instance_table_matches_the_sagemaker_gpu_mme_table() -> None:
    assert len(GPU_MME_INSTANCE_TYPES) == 12
    g5 = gpu_instance("ml.g5.2xlarge")
    assert (g5.gpu, g5.compute_capability, g5.gpu_memory_gib, g5.vcpus, g5.memory_gib) == (
        "A10G",
        8.6,
        24,
        8,
        32,
    )
    t4 = gpu_instance("ml.g4dn.16xlarge")
    assert (t4.gpu, t4.compute_capability, t4.gpu_memory_gib, t4.vcpus, t4.memory_gib) == (
        "T4",
        7.5,
        16,
        64,
        256,
    )
    assert (
        gpu_instance("ml.p3.2xlarge").memory_gib == 61
        and not gpu_instance("ml.p3.2xlarge").has_instance_storage
    )
    assert gpu_instance("ml.g5.xlarge").instance_storage_gb == 250
    assert gpu_instance("ml.g4dn.xlarge").instance_storage_gb == 125
    for instance in GPU_MME_INSTANCE_TYPES.values():
        assert (instance.default_driver, instance.default_cuda) == (470, "11.4")
        assert set(instance.inference_amis) <= set(INFERENCE_AMIS)
    assert gpu_instance("ml.p2.xlarge").inference_amis == ()
    with pytest.raises(KeyError, match=r"unknown GPU multi-model instance type 'ml\.g6\.xlarge'"):
        gpu_instance("ml.g6.xlarge")


def test_inference_amis_match_the_api_reference() -> None:
    assert {name: (ami.driver, ami.cuda, ami.mounts_cuda_compat) for name, ami in INFERENCE_AMIS.items()} == {
        "al2023-ami-sagemaker-inference-gpu-4-1": (580, "13.0", False),
        "al2-ami-sagemaker-inference-gpu-3-1": (550, "12.4", False),
        "al2-ami-sagemaker-inference-gpu-2-1": (535, "12.2", False),
        "al2-ami-sagemaker-inference-gpu-2": (535, "12.2", True),
    }


def test_the_default_tag_runs_natively_on_the_default_instance_type() -> None:
    assert [ami.name for ami in serving_amis(DEFAULT_TRITON_TAG, "ml.g5.xlarge")] == [
        "al2023-ami-sagemaker-inference-gpu-4-1"
    ]
    # The default platform driver (470, CUDA 11.4) runs none of the tags: every variant needs an AMI.
    assert all(image.min_driver is None or image.min_driver > 470 for image in TRITON_IMAGES.values())


def test_codebuild_gpus_and_regions() -> None:
    assert (CODEBUILD_GPUS["SMALL"].gpu, CODEBUILD_GPUS["SMALL"].compute_capability) == ("A10G", 8.6)
    assert (CODEBUILD_GPUS["LARGE"].gpu, CODEBUILD_GPUS["LARGE"].gpu_count) == ("V100", 4)
    assert CODEBUILD_GPUS["SMALL"].concurrency_quota_name == (
        "Concurrently running builds for Linux/GPU Small environment"
    )
    # botocore 1.44.8 Fleet.environmentType: seven regions; the older text's other six are opt-in only.
    seven = {
        "us-east-1",
        "us-east-2",
        "us-west-2",
        "eu-west-1",
        "eu-central-1",
        "ap-northeast-1",
        "ap-southeast-2",
    }
    assert seven == CODEBUILD_GPU_REGIONS
    assert CODEBUILD_GPU_REGIONS.isdisjoint(CODEBUILD_GPU_REGIONS_UNCONFIRMED)
    assert deployable_regions("25.04-py3") == sorted(CODEBUILD_GPU_REGIONS)
    assert "cn-north-1" in deployable_regions("25.04-py3", unconfirmed_build_regions=True)
    assert "cn-north-1" not in deployable_regions("25.09-py3", unconfirmed_build_regions=True)


def test_build_images_are_the_patched_al2023_ones_where_one_exists_for_the_cuda_major() -> None:
    # aws/deep-learning-containers docs/src/data: every AL2023 PyTorch GPU image is CUDA 13; CUDA 12 has only
    # the Ubuntu pytorch-training images, past their end of patch.
    assert (BUILD_IMAGES[13].repository, BUILD_IMAGES[13].os) == ("pytorch", "amzn2023")
    assert BUILD_IMAGES[13].tag == "2.12.1-cu130-amzn2023"
    assert (BUILD_IMAGES[12].repository, BUILD_IMAGES[12].end_of_patch) == ("pytorch-training", "2026-08-06")
    for image in BUILD_IMAGES.values():
        assert f"cu{image.cuda.replace('.', '')[:3]}" in image.tag
        assert image.min_compute_capability > CODEBUILD_GPUS["LARGE"].compute_capability


def test_quota_names_and_prices() -> None:
    assert endpoint_quota_name("ml.g5.xlarge") == "ml.g5.xlarge for endpoint usage"
    assert hourly_price("ml.g5.xlarge", "us-east-1") == 1.408
    assert hourly_price("ml.g5.xlarge", "us-east-1", {("ml.g5.xlarge", "us-east-1"): 1.2}) == 1.2
    assert hourly_price("ml.g5.xlarge", "eu-west-1") is None
    assert not any(price.confirmed for price in platform.HOURLY_PRICES.values()), "the figures are inferred"

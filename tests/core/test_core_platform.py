"""The platform table: its facts agree with each other and with the sources' numbers copied into it."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest
import yaml

from triton_mme.core import platform
from triton_mme.core.platform import (
    PLATFORM,
    Quota,
    deployable_regions,
    endpoint_quota,
    gpu_instance,
    hourly_price,
    registry_accounts,
    serving_amis,
    triton_image,
    triton_release_of,
)
from triton_mme.core.platform_tables import (
    DATA_FOLDER,
    CodeBuildTable,
    GpuInstancesTable,
    InferenceAmisTable,
    InferenceComponentsTable,
    LimitsTable,
    PlatformDataError,
    PricesTable,
    RegionsTable,
    TritonImagesTable,
    parse_table,
)
from triton_mme_cdk.constructs.build.build_runner import SOURCE_FILES as BUILD_RUNNER_SOURCES
from triton_mme_cdk.constructs.build.runner_source import LEFT_OUT
from triton_mme_cdk.constructs.build.serving_check import SOURCE_FILES as SERVING_CHECK_SOURCES

TABLES = {
    "triton_images.yaml": TritonImagesTable,
    "inference_amis.yaml": InferenceAmisTable,
    "gpu_instances.yaml": GpuInstancesTable,
    "regions.yaml": RegionsTable,
    "codebuild.yaml": CodeBuildTable,
    "limits.yaml": LimitsTable,
    "prices.yaml": PricesTable,
    "inference_components.yaml": InferenceComponentsTable,
}


def test_registry_accounts_match_the_sdk_table() -> None:
    accounts = registry_accounts("25.04-py3")
    assert accounts["us-east-1"] == accounts["eu-west-1"] == "763104351884"
    assert accounts["af-south-1"] == "626614931356"
    assert accounts["cn-north-1"] == "727897471807"
    assert "cn-north-1" not in registry_accounts("25.09-py3")
    assert "ap-southeast-6" in registry_accounts("26.05-py3")


def test_every_image_is_published_in_deep_learning_containers_registries() -> None:
    for image in PLATFORM.triton_images.values():
        assert image.regions <= PLATFORM.dlc_regions, image.tag


@pytest.mark.parametrize("image", PLATFORM.triton_images.values(), ids=lambda image: image.tag)
def test_image_facts_are_consistent(image: platform.TritonImage) -> None:
    assert image.release == image.tag.removesuffix("-py3")
    assert image.cuda_major in PLATFORM.build_images, "the build runner needs an image for this CUDA"
    assert f"-cu{image.cuda_major}" in PLATFORM.build_images[image.cuda_major].tag
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
    assert {tag for tag, image in PLATFORM.triton_images.items() if image.min_compute_capability == 7.5} == {
        "25.04-py3",
        "25.09-py3",
        "25.12-py3",
        "26.03-py3",
        "26.04-py3",
        "26.05-py3",
    }


def test_instance_table_matches_the_sagemaker_gpu_mme_table() -> None:
    assert len(PLATFORM.gpu_instance_types) == 12
    expected = {"ml.g5.2xlarge": ("A10G", 8.6, 24, 8, 32), "ml.g4dn.16xlarge": ("T4", 7.5, 16, 64, 256)}
    for name, figures in expected.items():
        it = gpu_instance(name)
        assert (it.gpu, it.compute_capability, it.gpu_memory_gib, it.vcpus, it.memory_gib) == figures
    assert (
        gpu_instance("ml.p3.2xlarge").memory_gib == 61
        and not gpu_instance("ml.p3.2xlarge").has_instance_storage
    )
    assert gpu_instance("ml.g5.xlarge").instance_storage_gb == 250
    assert gpu_instance("ml.g4dn.xlarge").instance_storage_gb == 125
    for instance in PLATFORM.gpu_instance_types.values():
        assert (instance.default_driver, instance.default_cuda) == (470, "11.4")
        assert set(instance.inference_amis) <= set(PLATFORM.inference_amis)
    assert gpu_instance("ml.p2.xlarge").inference_amis == ()
    with pytest.raises(KeyError, match=r"unknown GPU multi-model instance type 'ml\.g6\.xlarge'"):
        gpu_instance("ml.g6.xlarge")


def test_inference_amis_match_the_api_reference() -> None:
    assert {
        name: (ami.driver, ami.cuda, ami.mounts_cuda_compat) for name, ami in PLATFORM.inference_amis.items()
    } == {
        "al2023-ami-sagemaker-inference-gpu-4-1": (580, "13.0", False),
        "al2-ami-sagemaker-inference-gpu-3-1": (550, "12.4", False),
        "al2-ami-sagemaker-inference-gpu-2-1": (535, "12.2", False),
        "al2-ami-sagemaker-inference-gpu-2": (535, "12.2", True),
    }


def test_the_default_tag_runs_natively_on_the_default_instance_type() -> None:
    assert [ami.name for ami in serving_amis(PLATFORM.images.default_tag.value, "ml.g5.xlarge")] == [
        "al2023-ami-sagemaker-inference-gpu-4-1"
    ]
    # The default platform driver (470, CUDA 11.4) runs none of the tags: every variant needs an AMI.
    assert all(
        image.min_driver is None or image.min_driver > 470 for image in PLATFORM.triton_images.values()
    )


def test_codebuild_gpus_and_regions() -> None:
    assert (PLATFORM.codebuild_gpus["SMALL"].gpu, PLATFORM.codebuild_gpus["SMALL"].compute_capability) == (
        "A10G",
        8.6,
    )
    assert (PLATFORM.codebuild_gpus["LARGE"].gpu, PLATFORM.codebuild_gpus["LARGE"].gpu_count) == ("V100", 4)
    # Service Quotas spells the GPU rows without the slash of the others ("Linux/Small").
    assert (
        PLATFORM.codebuild_gpus["SMALL"].concurrency_quota.code,
        PLATFORM.codebuild_gpus["SMALL"].concurrency_quota.name,
    ) == (
        "L-F1FE1B52",
        "Concurrently running builds for Linux GPU Small environment",
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
    assert seven == PLATFORM.regions.codebuild_gpu_regions.value
    assert PLATFORM.regions.codebuild_gpu_regions.value.isdisjoint(
        PLATFORM.regions.codebuild_gpu_regions_unconfirmed.value
    )
    assert deployable_regions("25.04-py3") == sorted(PLATFORM.regions.codebuild_gpu_regions.value)
    assert "cn-north-1" in deployable_regions("25.04-py3", unconfirmed_build_regions=True)
    assert "cn-north-1" not in deployable_regions("25.09-py3", unconfirmed_build_regions=True)


def test_build_images_are_the_patched_al2023_ones_where_one_exists_for_the_cuda_major() -> None:
    # aws/deep-learning-containers docs/src/data: every AL2023 PyTorch GPU image is CUDA 13; CUDA 12 has only
    # the Ubuntu pytorch-training images, past their end of patch.
    assert (PLATFORM.build_images[13].repository, PLATFORM.build_images[13].os) == ("pytorch", "amzn2023")
    assert PLATFORM.build_images[13].tag == "2.12.1-cu130-amzn2023"
    assert (PLATFORM.build_images[12].repository, PLATFORM.build_images[12].end_of_patch) == (
        "pytorch-training",
        "2026-08-06",
    )
    for image in PLATFORM.build_images.values():
        assert f"cu{image.cuda.replace('.', '')[:3]}" in image.tag
        assert image.min_compute_capability > PLATFORM.codebuild_gpus["LARGE"].compute_capability


def test_quota_names_and_prices() -> None:
    assert endpoint_quota("ml.g5.xlarge") == Quota(
        "sagemaker", "L-1928E07B", "ml.g5.xlarge for endpoint usage"
    )
    assert all(endpoint_quota(name).code for name in PLATFORM.gpu_instance_types), "every type by its code"
    assert hourly_price("ml.g5.xlarge", "us-east-1") == 1.408
    assert hourly_price("ml.g5.xlarge", "us-east-1", {("ml.g5.xlarge", "us-east-1"): 1.2}) == 1.2
    assert hourly_price("ml.g5.xlarge", "eu-west-1") is None
    assert not any(price.confirmed for price in platform.PLATFORM.hourly_prices.values()), (
        "the figures are inferred"
    )


# ----- the data files behind the table ----------------------------------------------------------------------
REPO = Path(__file__).resolve().parents[2]
SIZING_ASSUMPTIONS = REPO / "triton_mme" / "sizing" / "assumptions.yaml"
DATA_FILES = [*sorted((REPO / "triton_mme" / "core" / DATA_FOLDER).glob("*.yaml")), SIZING_ASSUMPTIONS]


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda path: path.name)
def test_every_table_or_each_of_its_entries_names_a_source(path: Path) -> None:
    tables = yaml.safe_load(path.read_text(encoding="utf-8"))
    sources = []
    for name, table in tables.items():
        if isinstance(table, dict) and "source" in table:
            sources.append(table["source"])
        else:
            assert isinstance(table, list) and table, f"{path.name}: {name} has no source and no entries"
            for index, entry in enumerate(table):
                assert "source" in entry, f"{path.name}: {name}[{index}] has no source"
                sources.append(entry["source"])
    for source in sources:
        text = " ".join(source.split())
        assert "https://" in text or text.startswith(("this repository:", "unconfirmed")), text


def test_the_data_files_travel_with_the_package_and_the_runners() -> None:
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for path in DATA_FILES:
        package = ".".join(path.parent.relative_to(REPO).parts)
        patterns = [*package_data.get(package, []), *package_data.get(package.rsplit(".", 1)[0], [])]
        relative = [path.name, f"{path.parent.name}/{path.name}"]
        assert any(fnmatch(name, pattern) for name in relative for pattern in patterns), path
    # Both GPU runners ship the core folder whole; nothing they leave out matches a data file.
    assert "triton_mme/core" in BUILD_RUNNER_SOURCES and "triton_mme/core" in SERVING_CHECK_SOURCES
    assert not any(fnmatch(path.name, pattern) for path in DATA_FILES for pattern in LEFT_OUT)


def _malformed(old: str, new: str, file_name: str = "triton_images.yaml") -> str:
    text = (REPO / "triton_mme" / "core" / DATA_FOLDER / file_name).read_text(encoding="utf-8")
    assert old in text
    with pytest.raises(PlatformDataError) as refused:
        parse_table(file_name, text.replace(old, new, 1), TABLES[file_name])
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_a_malformed_file_is_refused_in_one_line_naming_file_entry_and_field() -> None:
    assert _malformed("min_driver: 550", "min_driver: many") == (
        "triton_images.yaml: images[2] (24.03-py3).min_driver: Input should be a valid integer, unable to "
        "parse string as an integer (got 'many')"
    )
    # YAML reads an unquoted 3.10 as the number 3.1: refused, not silently turned into "3.1".
    assert _malformed('python: "3.10"', "python: 3.10").startswith(
        "triton_images.yaml: images[0] (23.12-py3).python: Input should be a valid string"
    )
    ami = "al2023-ami-sagemaker-inference-gpu-4-1"
    assert _malformed("false\n    source:", "false\n    origin:", "inference_amis.yaml") == (
        f"inference_amis.yaml: amis[0] ({ami}).source: required field is missing"
    )
    assert _malformed("  value: 60\n", "  value: 60\n  unit: s\n", "limits.yaml") == (
        "limits.yaml: custom_resource_timeout_minutes.unit: unknown field"
    )
    assert "images[0] (23.12-py3).source: a source is a document's https:// URL" in _malformed(
        "source: https://docs.nvidia.com", "source: docs.nvidia.com"
    )
    assert _malformed("images:\n", "images:\n  - [", "triton_images.yaml").startswith(
        "triton_images.yaml: not valid YAML at line"
    )
    assert _malformed("default_tag:\n  value: 25.04-py3", "default_tag:\n  value: 99.99-py3") == (
        "triton_images.yaml: default_tag: '99.99-py3' is not one of the images"
    )
    assert _malformed("    gpu: T4\n", "    gpu: T5\n", "gpu_instances.yaml").startswith(
        "gpu_instances.yaml: families[0].gpu: 'T5' is not one of gpus"
    )


def test_limits_read_from_the_data_keep_their_values() -> None:
    # Figures no other test pins, each stated in its source.
    assert (
        platform.PLATFORM.limits.invoke_endpoint_timeout_seconds.value == 60
        and platform.PLATFORM.limits.model_loading_limit_seconds.value == 360
    )
    assert (
        platform.PLATFORM.limits.sagemaker_max_payload_bytes.value
        == platform.PLATFORM.limits.sagemaker_max_payload_bytes.value
        == 6 * 1024 * 1024
    )
    assert platform.PLATFORM.limits.custom_resource_timeout_minutes.value == 60
    assert (
        platform.PLATFORM.codebuild.min_build_timeout_minutes.value,
        platform.PLATFORM.codebuild.queued_timeout_minutes_range.value,
    ) == (
        5,
        (5, 480),
    )
    assert platform.PLATFORM.limits.guardrails.max_execution_seconds_range == (600, 28800)
    assert (
        platform.PLATFORM.limits.guardrails.canary_percent_range,
        platform.PLATFORM.limits.guardrails.linear_step_percent_range,
    ) == ((1, 50), (10, 50))
    assert (
        platform.PLATFORM.limits.guardrails.rolling_batch_percent_range == (5, 50)
        and platform.PLATFORM.limits.guardrails.max_rollback_alarms == 10
    )
    assert platform.PLATFORM.multi_model_environment == {
        "SAGEMAKER_MULTI_MODEL": "true",
        "SAGEMAKER_BIND_TO_PORT": "8080",
    }
    assert (
        platform.PLATFORM.limits.sagemaker_container.serve_command,
        platform.PLATFORM.limits.sagemaker_container.port,
    ) == ("serve", 8080)
    assert platform.PLATFORM.limits.metrics.variant_dimensions == ("EndpointName", "VariantName")
    assert (
        platform.PLATFORM.limits.s3_condition_keys.if_none_match,
        platform.PLATFORM.limits.s3_condition_keys.if_match,
    ) == ("s3:if-none-match", "s3:if-match")
    assert platform.PLATFORM.prices.hours_per_month.value == 730


# ----- inference components ---------------------------------------------------------------------------------
def test_inference_components_run_on_the_confirmed_families_only() -> None:
    from triton_mme.core.platform import (
        PLATFORM,
        component_instance_problem,
    )

    assert (
        component_instance_problem("ml.g5.2xlarge") is None
        and component_instance_problem("ml.g4dn.xlarge") is None
    )
    refusal = component_instance_problem("ml.p3.2xlarge")
    assert refusal is not None and "unconfirmed" in refusal and "ml.g5.*" in refusal
    assert {name.rsplit(".", 1)[0] for name in PLATFORM.gpu_instance_types} >= set(
        PLATFORM.components.instance_families.supported
    )


def test_the_no_capacity_answer_is_recorded_for_the_client() -> None:
    from triton_mme.core.platform import PLATFORM

    assert (
        PLATFORM.components.no_capacity_error.code == "ValidationError"
        and PLATFORM.components.no_capacity_error.http_status == 400
    )
    assert PLATFORM.components.no_capacity_error.message.startswith("Inference Component has no capacity")
    assert PLATFORM.components.scale_to_zero.endpoint_min_instance_count == 0
    assert PLATFORM.components.scale_to_zero.wake_metric == "NoCapacityInvocationFailures"

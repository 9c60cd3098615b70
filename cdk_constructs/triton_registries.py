"""Where AWS publishes the SageMaker Triton image, per image tag and region.

Source: the SageMaker Python SDK's `sagemaker-tritonserver.json` (sagemaker-core, image_uri_config).
Tags from 23.12 on live in the Deep Learning Containers accounts: one account in most regions, a
region-specific account in the opt-in regions and China. Add a tag here when AWS publishes one.
"""

from __future__ import annotations

TRITON_REPOSITORY = "sagemaker-tritonserver"

_DLC_ACCOUNT = "763104351884"
_REGION_SPECIFIC_ACCOUNTS = {
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-northeast-3": "364406365360",
    "ap-south-2": "772153158452",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069",
    "ap-southeast-7": "590183813437",
    "ca-west-1": "204538143572",
    "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807",
    "eu-central-2": "380420809688",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "il-central-1": "780543022126",
    "me-central-1": "914824155844",
    "me-south-1": "217643126080",
    "mx-central-1": "637423239942",
}

_REGIONS_2024 = frozenset(
    {
        "af-south-1", "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
        "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ca-central-1", "ca-west-1", "cn-north-1",
        "cn-northwest-1", "eu-central-1", "eu-north-1", "eu-south-1", "eu-west-1", "eu-west-2", "eu-west-3",
        "il-central-1", "me-south-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
    }
)  # fmt: skip
_REGIONS_2025 = _REGIONS_2024 | {
    "ap-east-2", "ap-south-2", "ap-southeast-4", "ap-southeast-5", "ap-southeast-7", "eu-central-2",
    "eu-south-2", "me-central-1", "mx-central-1",
}  # fmt: skip
# From 25.09 (CUDA 13) on: no China regions, one more opt-in region.
_REGIONS_CUDA13 = (_REGIONS_2025 - {"cn-north-1", "cn-northwest-1"}) | {"ap-southeast-6"}

_REGIONS_BY_TAG: dict[str, frozenset[str]] = {
    "23.12-py3": _REGIONS_2024,
    "24.01-py3": _REGIONS_2024,
    "24.03-py3": _REGIONS_2024,
    "24.05-py3": _REGIONS_2024,
    "24.09-py3": _REGIONS_2024,
    "25.04-py3": _REGIONS_2025,
    "25.09-py3": _REGIONS_CUDA13,
    "26.05-py3": _REGIONS_CUDA13,
}

TRITON_IMAGE_TAGS: tuple[str, ...] = tuple(_REGIONS_BY_TAG)


def registry_accounts(tag: str) -> dict[str, str]:
    """Region -> ECR registry account that holds `sagemaker-tritonserver:<tag>`; KeyError for unknown tags."""
    return {
        region: _REGION_SPECIFIC_ACCOUNTS.get(region, _DLC_ACCOUNT) for region in sorted(_REGIONS_BY_TAG[tag])
    }

"""The endpoint's instances, image and logs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from pydantic import Field, model_validator

from triton_mme.core.platform import (
    PLATFORM,
    gpu_instance,
)
from triton_mme_cdk.settings.base import SettingsGroup, log_retention_of, retention_problem, setting_error
from triton_mme_cdk.settings.platform_rules import (
    AUTO,
    resolve_inference_ami,
)

if TYPE_CHECKING:
    from aws_cdk import aws_logs as logs


class EndpointSettings(SettingsGroup):
    """The endpoint's instances, image and logs."""

    instance_type: str = Field("ml.g5.xlarge", alias="instanceType")
    triton_image_tag: str = Field(PLATFORM.images.default_tag.value, alias="tritonImageTag")
    # The SageMaker inference AMI (NVIDIA driver) of the variant; `auto` picks the newest one whose driver
    # runs the tag's CUDA natively on the instance type (triton_mme_cdk/settings/platform_rules.py).
    inference_ami_version: str = Field(AUTO, alias="inferenceAmiVersion")
    # Without network access the container still gets its models: SageMaker downloads them (docs/platform.md).
    network_isolation: bool = Field(True, alias="networkIsolation")
    log_retention_days: int = Field(30, alias="endpointLogRetentionDays")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.instance_type not in PLATFORM.gpu_instance_types:
            raise setting_error(
                "instanceType",
                self.instance_type,
                "is not a single-GPU type supported by GPU multi-model endpoints; allowed: "
                + ", ".join(PLATFORM.gpu_instance_types),
            )
        if self.triton_image_tag not in PLATFORM.triton_image_tags:
            raise setting_error(
                "tritonImageTag",
                self.triton_image_tag,
                "is not a known SageMaker Triton image tag; allowed: "
                + ", ".join(PLATFORM.triton_image_tags),
            )
        problem = retention_problem("endpointLogRetentionDays", self.log_retention_days)
        if problem:
            raise problem
        return self

    @property
    def volume_accepts_kms_key(self) -> bool:
        return not gpu_instance(self.instance_type).has_instance_storage

    @property
    def resolved_inference_ami(self) -> str:
        """The InferenceAmiVersion the variant gets (never `auto`)."""
        return resolve_inference_ami(self.triton_image_tag, self.instance_type, self.inference_ami_version)

    @property
    def log_retention(self) -> logs.RetentionDays:
        return log_retention_of(self.log_retention_days)

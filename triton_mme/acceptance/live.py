"""The live endpoint as SageMaker describes it: the endpoint, the config it serves and that config's model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LiveEndpoint:
    endpoint: dict[str, Any]
    config: dict[str, Any]
    model: dict[str, Any] | None

    @property
    def variants(self) -> list[dict[str, Any]]:
        return list(self.config.get("ProductionVariants", []))

    def variant(self, name: str) -> dict[str, Any] | None:
        return next((v for v in self.variants if v.get("VariantName") == name), None)


def describe_live(sagemaker: Any, endpoint_name: str, variant_name: str) -> LiveEndpoint:
    """DescribeEndpoint, DescribeEndpointConfig of its config, DescribeModel of the variant's model."""
    endpoint = sagemaker.describe_endpoint(EndpointName=endpoint_name)
    config = sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    variant = next(
        (v for v in config.get("ProductionVariants", []) if v.get("VariantName") == variant_name), None
    )
    model = sagemaker.describe_model(ModelName=variant["ModelName"]) if variant else None
    return LiveEndpoint(endpoint=endpoint, config=config, model=model)

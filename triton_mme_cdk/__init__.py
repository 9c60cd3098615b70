"""The CDK side: an embeddable construct library and the app that uses it.

Public API (`pip install triton-mme-cdk[cdk]`, docs/embedding.md, docs/constructs.md):

- `TritonMultiModelEndpoint` / `TritonMultiModelEndpointProps`: the whole multi-model endpoint; `validate`
  checks its props together with their catalog (`Catalog`), which `load_build_catalog` loads and pins, with
  the files its build ships (`CatalogFiles`).
- `ModelStore` / `ModelStoreProps`: the model bucket and its grants.
- `GpuRunner` / `GpuRunnerProps`: the GPU CodeBuild runner both build stages are.
- `Settings` and its groups (`EndpointSettings`, `ScalingSettings`, `AlarmThresholds`, `UpdatePolicy`,
  `BuildRunnerSettings`), `SettingsError`.

The names load on first use, so `import triton_mme_cdk.settings` (the planner, preflight) starts no jsii
process.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real types for type checkers; at run time they load on first use
    from triton_mme_cdk.catalog_files import Catalog, CatalogFiles, load_build_catalog
    from triton_mme_cdk.constructs.build.gpu_runner import GpuRunner, GpuRunnerProps
    from triton_mme_cdk.constructs.multi_model_endpoint import TritonMultiModelEndpoint
    from triton_mme_cdk.constructs.multi_model_endpoint_props import TritonMultiModelEndpointProps, validate
    from triton_mme_cdk.constructs.store.model_store import ModelStore, ModelStoreProps
    from triton_mme_cdk.settings import (
        AlarmThresholds,
        BuildRunnerSettings,
        EndpointSettings,
        ScalingSettings,
        Settings,
        SettingsError,
        UpdatePolicy,
    )

_EXPORTS = {
    "TritonMultiModelEndpoint": "triton_mme_cdk.constructs.multi_model_endpoint",
    "TritonMultiModelEndpointProps": "triton_mme_cdk.constructs.multi_model_endpoint_props",
    "validate": "triton_mme_cdk.constructs.multi_model_endpoint_props",
    "Catalog": "triton_mme_cdk.catalog_files",  # triton_mme.catalog's, as the props take it
    "CatalogFiles": "triton_mme_cdk.catalog_files",
    "load_build_catalog": "triton_mme_cdk.catalog_files",
    "ModelStore": "triton_mme_cdk.constructs.store.model_store",
    "ModelStoreProps": "triton_mme_cdk.constructs.store.model_store",
    "GpuRunner": "triton_mme_cdk.constructs.build.gpu_runner",
    "GpuRunnerProps": "triton_mme_cdk.constructs.build.gpu_runner",
    "Settings": "triton_mme_cdk.settings",
    "SettingsError": "triton_mme_cdk.settings",
    "EndpointSettings": "triton_mme_cdk.settings",
    "ScalingSettings": "triton_mme_cdk.settings",
    "AlarmThresholds": "triton_mme_cdk.settings",
    "UpdatePolicy": "triton_mme_cdk.settings",
    "BuildRunnerSettings": "triton_mme_cdk.settings",
}
__all__ = [
    "AlarmThresholds",
    "BuildRunnerSettings",
    "Catalog",
    "CatalogFiles",
    "EndpointSettings",
    "GpuRunner",
    "GpuRunnerProps",
    "ModelStore",
    "ModelStoreProps",
    "ScalingSettings",
    "Settings",
    "SettingsError",
    "TritonMultiModelEndpoint",
    "TritonMultiModelEndpointProps",
    "UpdatePolicy",
    "load_build_catalog",
    "validate",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'triton_mme_cdk' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

"""Checks that the build runner can build what the catalog asks for, for the endpoint it serves."""

from __future__ import annotations

from pathlib import Path

from infra.settings import Settings, SettingsError
from triton_mme.core.catalog import Catalog, Format
from triton_mme.core.platform import BUILDER_GPUS, TRITON_IMAGES, triton_image

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def catalog_in_project(settings: Settings) -> str:
    """The catalog's path relative to the project root: the runner's source holds only project files."""
    path = Path(settings.model_catalog).resolve()
    if not path.is_relative_to(PROJECT_ROOT):
        raise SettingsError(
            f"modelCatalog={settings.model_catalog} is outside the project, so the build runner cannot get "
            f"it; allowed: a catalog file under {PROJECT_ROOT}"
        )
    return path.relative_to(PROJECT_ROOT).as_posix()


def check_build_target(settings: Settings, catalog: Catalog) -> None:
    """Raise SettingsError (one line, naming the fix) when the runner cannot build this catalog here."""
    catalog_in_project(settings)
    if Format.TENSORRT in catalog.formats:
        problem = tensorrt_problem(
            builder_compute_type=settings.builder_compute_type,
            instance_type=settings.instance_type,
            triton_image_tag=settings.triton_image_tag,
        )
        if problem:
            raise SettingsError(problem)


def tensorrt_problem(*, builder_compute_type: str, instance_type: str, triton_image_tag: str) -> str | None:
    """Why this runner cannot build TensorRT plans for this endpoint (one line), or None when it can."""
    builder = BUILDER_GPUS[builder_compute_type]
    if not instance_type.startswith(builder.endpoint_family):
        fitting = next(
            (name for name, gpu in BUILDER_GPUS.items() if instance_type.startswith(gpu.endpoint_family)),
            None,
        )
        fixes = [f"an {builder.endpoint_family}* instanceType"]
        if fitting:
            fixes.append(f"builderComputeType={fitting}")
        fixes.append("drop 'tensorrt' from the catalog's formats")
        return (
            f"the catalog asks for tensorrt, but builderComputeType={builder_compute_type} builds on "
            f"{builder.gpu} ({builder.architecture}), whose plans do not run on "
            f"instanceType={instance_type}; use " + ", or ".join(fixes)
        )
    if triton_image(triton_image_tag).tensorrt_requirement is None:
        known = ", ".join(tag for tag, image in TRITON_IMAGES.items() if image.tensorrt_requirement)
        return (
            f"the catalog asks for tensorrt, but the TensorRT of tritonImageTag={triton_image_tag} has no "
            f"known pip pin; use a tritonImageTag with one ({known}), or drop 'tensorrt' from the formats"
        )
    return None

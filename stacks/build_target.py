"""Checks that the build runner can build what the catalog asks for, for the endpoint it serves."""

from __future__ import annotations

from pathlib import Path

from cdk_constructs.build_environment import tensorrt_problem
from model_build.catalog import Catalog, Format
from stacks.settings import Settings, SettingsError

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

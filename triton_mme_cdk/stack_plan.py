"""What `triton-mme plan` needs to plan the stack `cdk deploy` would create: the instance counts and the GPU
utilisation target of the settings, the instance types synthesis accepts for the settings' catalog, and where
each value comes from (cdk.json, cdk.context.json, `-c`, or the default in triton_mme_cdk/settings/).

Read with the same code as synthesis (triton_mme_cdk.context, Settings, check_build_target): an instance type
is
offered only where `make synth` with `-c instanceType=<type>` would pass. Imports no aws_cdk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triton_mme.catalog import load_catalog
from triton_mme.core.platform import PLATFORM
from triton_mme_cdk.context import project_context, setting_origins, settings_from
from triton_mme_cdk.settings import Settings, SettingsError
from triton_mme_cdk.settings.build_target import check_build_target


@dataclass(frozen=True)
class StackPlan:
    settings: Settings
    accepted_instance_types: tuple[str, ...]
    refused_instance_types: tuple[tuple[str, str], ...]
    origins: dict[str, str]

    def origin(self, key: str) -> str:
        return self.origins.get(key, "default (triton_mme_cdk/settings/)")

    def value(self, key: str) -> Any:
        """The value of one context key (`minInstanceCount`), whichever group holds it."""
        return self.settings.context()[key]


def accepted_instance_types(
    settings: Settings, catalog_path: Path
) -> tuple[list[str], list[tuple[str, str]]]:
    """The GPU multi-model types synthesis accepts with these settings and this catalog, and the others
    with synthesis's own one-line reason."""
    catalog = load_catalog(catalog_path)
    accepted, refused = [], []
    for name in PLATFORM.gpu_instance_types:
        try:
            candidate = settings.with_values(instanceType=name)
            check_build_target(candidate, catalog)
        except SettingsError as error:
            refused.append((name, str(error)))
        else:
            accepted.append(name)
    return accepted, refused


def stack_plan(root: Path, pairs: Sequence[str] = ()) -> StackPlan:
    """The settings `cdk synth` reads in the project at `root` (with `-c` pairs), for the planner."""
    settings = settings_from(project_context(pairs, root))
    catalog = Path(settings.model_catalog)
    accepted, refused = accepted_instance_types(
        settings, catalog if catalog.is_absolute() else root / catalog
    )
    return StackPlan(settings, tuple(accepted), tuple(refused), setting_origins(pairs, root))

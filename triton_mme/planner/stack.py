"""The stack a plan is for: by default the settings `cdk deploy` would read in the project checkout.

The instance counts, the GPU utilisation target, the Triton tag and the instance types that synthesis
accepts for the settings' catalog come from the CDK app's own code (triton_mme_cdk.stack_plan, which reads
cdk.json, cdk.context.json and `-c` pairs through triton_mme_cdk.context and validates through
triton_mme_cdk.settings and triton_mme_cdk.build_target), imported only when a plan runs in a checkout: the
planner never retypes a default or a rule of the app.
Every value the plan uses is reported with where it came from.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triton_mme.core.errors import UserError
from triton_mme.planner.defaults import DEFAULT_MAX_INSTANCES
from triton_mme.sizing.targets import DEFAULT_GPU_UTILIZATION_TARGET

STACK_MODULE = "triton_mme_cdk.stack_plan"
PLANNER_DEFAULT = "planner default"


class StackError(UserError, ValueError):
    """The stack's settings cannot be read; one line."""


@dataclass(frozen=True)
class Chosen:
    """A value the plan uses and where it came from ("--min-instances", "minInstanceCount in cdk.json")."""

    value: Any
    origin: str


@dataclass(frozen=True)
class PlanFor:
    min_instances: Chosen
    max_instances: Chosen
    gpu_utilization_target: Chosen
    triton_tag: Chosen
    instance_types: Chosen  # tuple of names; () means every type the platform table has
    deployed: str | None = None  # the stack's instanceType, when a stack was read
    refused: tuple[tuple[str, str], ...] = ()
    stack_root: Path | None = None

    def lines(self) -> list[str]:
        """Where each value came from, one line each; the types synthesis refuses with the first reason."""
        types = ", ".join(self.instance_types.value) or "every GPU multi-model type of the platform table"
        lines = [
            f"Stack: {self._where()}",
            f"  instances {self.min_instances.value}..{self.max_instances.value} (min: "
            f"{self.min_instances.origin}; max: {self.max_instances.origin})",
            f"  GPU utilization target {self.gpu_utilization_target.value:g} % "
            f"({self.gpu_utilization_target.origin})",
            f"  Triton image {self.triton_tag.value} ({self.triton_tag.origin})",
            f"  instance types: {types} ({self.instance_types.origin})",
        ]
        if self.refused:
            name, reason = self.refused[0]
            others = f" and {len(self.refused) - 1} more" if len(self.refused) > 1 else ""
            lines.append(f"  left out: {name}{others}, which synth refuses: {reason}")
        return lines

    def _where(self) -> str:
        if self.stack_root is None:
            return "none read (--no-stack, or not a project checkout): the planner's defaults and options"
        deployed = f"; it deploys {self.deployed}" if self.deployed else ""
        return f"the settings `cdk deploy` reads in {self.stack_root}{deployed}"


def _stack_module(root: Path) -> Any:
    if not (root / "app.py").is_file() or not (root / "triton_mme_cdk" / "stack_plan.py").is_file():
        return None
    where = str(root.resolve())
    if where not in sys.path:
        sys.path.insert(0, where)
    return importlib.import_module(STACK_MODULE)


def _origin(key: str, origin: str) -> str:
    return f"{key}, {origin}"


def plan_for(
    root: Path | None,
    context: Sequence[str] = (),
    *,
    min_instances: int | None = None,
    max_instances: int | None = None,
    gpu_utilization_target: float | None = None,
    triton_tag: str | None = None,
    instance_types: Sequence[str] = (),
    default_triton_tag: str,
) -> PlanFor:
    """The values a plan uses: an option given wins, then the stack's setting, then the planner default."""
    module = _stack_module(root) if root is not None else None
    stack = None
    if module is not None:
        try:
            stack = module.stack_plan(root, list(context))
        except ValueError as error:  # SettingsError, CatalogError: one line each
            raise StackError(f"the stack's settings in {root}: {error}") from None

    def chosen(given: Any, option: str, key: str, default: Any) -> Chosen:
        if given is not None:
            return Chosen(given, option)
        if stack is not None:
            return Chosen(stack.value(key), _origin(key, stack.origin(key)))
        return Chosen(default, PLANNER_DEFAULT)

    low = chosen(min_instances, "--min-instances", "minInstanceCount", 1)
    high = chosen(max_instances, "--max-instances", "maxInstanceCount", None)
    if high.value is None:
        high = Chosen(DEFAULT_MAX_INSTANCES, PLANNER_DEFAULT)
    target = chosen(
        gpu_utilization_target,
        "--gpu-utilization-target",
        "gpuUtilizationTarget",
        DEFAULT_GPU_UTILIZATION_TARGET,
    )
    tag = chosen(triton_tag, "--triton-tag", "tritonImageTag", default_triton_tag)
    if instance_types:
        types = Chosen(tuple(instance_types), "--instance-types")
    elif stack is not None:
        types = Chosen(stack.accepted_instance_types, "those `make synth` accepts for the stack's catalog")
    else:
        types = Chosen((), PLANNER_DEFAULT)
    if low.value > high.value:
        raise StackError(
            f"{low.origin.split(',')[0]}={low.value} is above {high.origin.split(',')[0]}={high.value}; "
            "allowed: at most the maximum (set --min-instances or --max-instances)"
        )
    return PlanFor(
        low,
        high,
        target,
        tag,
        types,
        deployed=stack.value("instanceType") if stack is not None else None,
        refused=tuple(stack.refused_instance_types) if stack is not None and not instance_types else (),
        stack_root=root if stack is not None else None,
    )

"""The stack a plan is for: by default the settings `cdk deploy` would read in the project checkout.

The instance counts, the GPU utilisation target, the Triton tag and the instance types that synthesis
accepts for the settings' catalog come from the CDK app's own code, which the caller passes in as
`read_stack` (the plan command passes triton_mme_cdk.stack_plan.stack_plan, which reads cdk.json,
cdk.context.json and `-c` pairs and validates them as synthesis does): the planner never retypes a default
or a rule of the app, and imports nothing of it.
Every value the plan uses is reported with where it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from triton_mme.core.errors import UserError
from triton_mme.planner.defaults import DEFAULT_MAX_INSTANCES
from triton_mme.sizing.targets import DEFAULT_GPU_UTILIZATION_TARGET

PLANNER_DEFAULT = "planner default"
# What marks the project's checkout: its app and the module that reads its settings for a plan.
CHECKOUT_FILES = ("app.py", "triton_mme_cdk/stack_plan.py")


class StackError(UserError, ValueError):
    """The stack's settings cannot be read; one line."""


class StackSettings(Protocol):
    """The stack's settings as synthesis reads them (triton_mme_cdk.stack_plan.StackPlan)."""

    @property
    def accepted_instance_types(self) -> tuple[str, ...]: ...

    @property
    def refused_instance_types(self) -> tuple[tuple[str, str], ...]: ...

    def value(self, key: str) -> Any: ...

    def origin(self, key: str) -> str: ...


# The project's checkout and `-c` pairs -> its stack's settings; ValueError (one line) for a bad one.
StackReader = Callable[[Path, Sequence[str]], StackSettings]


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


def is_checkout(root: Path) -> bool:
    return all((root / name).is_file() for name in CHECKOUT_FILES)


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
    read_stack: StackReader | None = None,
) -> PlanFor:
    """The values a plan uses: an option given wins, then the stack's setting (where `root` is a checkout and
    `read_stack` reads it), then the planner default."""
    stack = None
    if root is not None and read_stack is not None and is_checkout(root):
        try:
            stack = read_stack(root, list(context))
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

"""Checks that the build runner can build what the catalog asks for, for the endpoint it serves."""

from __future__ import annotations

import math
from dataclasses import dataclass

from triton_mme.catalog import Catalog
from triton_mme.core.errors import quoted
from triton_mme.core.formats import Format
from triton_mme.core.platform import (
    PLATFORM,
    gpu_instance,
    supports_compute_capability,
    triton_image,
)
from triton_mme.core.wording import plural
from triton_mme.sizing.build_memory import (
    BUILD_PEAK_BASE_GIB,
    BUILD_PEAK_BYTES_PER_PARAMETER,
    estimated_build_peak_gib,
    parameter_count,
)
from triton_mme.sizing.build_time import SETUP_MINUTES, balanced_shards, estimate, model_seconds
from triton_mme_cdk.settings import Settings, SettingsError
from triton_mme_cdk.settings.build import AUTO_BUILD_RUNNERS_CAP, MAX_BUILD_RUNNERS, BuildRunnerSettings
from triton_mme_cdk.settings.platform_rules import build_gpu_problem, instance_patterns


def check_build_target(settings: Settings, catalog: Catalog) -> None:
    """Raise SettingsError (one line, naming the fix) when the runner cannot build this catalog here."""
    problem = build_memory_problem(catalog, builder_compute_type=settings.build.compute_type)
    if problem:
        raise SettingsError(problem)
    problem = build_time_problem(catalog, settings)
    if problem:
        raise SettingsError(problem)
    if Format.TENSORRT in catalog.formats:
        problem = tensorrt_problem(
            builder_compute_type=settings.build.compute_type,
            instance_type=settings.endpoint.instance_type,
            triton_image_tag=settings.endpoint.triton_image_tag,
        )
        if problem:
            raise SettingsError(problem)


def tensorrt_problem(*, builder_compute_type: str, instance_type: str, triton_image_tag: str) -> str | None:
    """Why this runner cannot build TensorRT plans for this endpoint (one line), or None when it can.

    A plan runs only on the compute capability that built it (hardware-compatible plans cover Ampere and
    newer only, and are slower), so the runner's GPU and the endpoint's GPU must have the same one.
    """
    builder = PLATFORM.codebuild_gpus[builder_compute_type]
    instance = gpu_instance(instance_type)
    if builder.compute_capability != instance.compute_capability:
        same_as_builder = [
            name
            for name, other in PLATFORM.gpu_instance_types.items()
            if other.compute_capability == builder.compute_capability
            and supports_compute_capability(triton_image_tag, name)
        ]
        fitting_builders = [
            name
            for name, gpu in PLATFORM.codebuild_gpus.items()
            if gpu.compute_capability == instance.compute_capability
            and build_gpu_problem(name, triton_image_tag) is None
        ]
        fixes = []
        if same_as_builder:
            patterns = instance_patterns(same_as_builder)
            fixes.append(f"an instanceType with {builder.compute_capability:.1f} ({patterns})")
        fixes.extend(f"builderComputeType={name}" for name in fitting_builders)
        fixes.append("drop 'tensorrt' from the catalog's formats")
        return (
            f"the catalog asks for tensorrt, but builderComputeType={builder_compute_type} builds on "
            f"{builder.gpu} (compute capability {builder.compute_capability:.1f}), whose plans do not run on "
            f"instanceType={instance_type} ({instance.gpu}, {instance.compute_capability:.1f}); use "
            + ", or ".join(fixes)
        )
    if triton_image(triton_image_tag).tensorrt_requirement is None:
        known = ", ".join(tag for tag, image in PLATFORM.triton_images.items() if image.tensorrt_requirement)
        return (
            f"the catalog asks for tensorrt, but the TensorRT of tritonImageTag={triton_image_tag} has no "
            f"known pip pin; use a tritonImageTag with one ({known}), or drop 'tensorrt' from the formats"
        )
    return None


def build_memory_problem(catalog: Catalog, *, builder_compute_type: str) -> str | None:
    """The first model whose estimated build peak exceeds the runner's memory (one line), or None.

    Raises CatalogError for a model whose parameters cannot be known before the build.
    """
    runner = PLATFORM.codebuild_gpus[builder_compute_type]
    for entry in catalog.models:
        peak = estimated_build_peak_gib(entry)
        if peak <= runner.memory_gib:
            continue
        largest = (runner.memory_gib - BUILD_PEAK_BASE_GIB) * 2**30 / BUILD_PEAK_BYTES_PER_PARAMETER
        roomier = [
            f"builderComputeType={name} ({gpu.memory_gib} GiB)"
            for name, gpu in PLATFORM.codebuild_gpus.items()
            if gpu.memory_gib >= peak
        ]
        millions = parameter_count(entry) / 1e6
        return (
            f"model {quoted(entry.name)} needs about {peak:.1f} GiB to build ({millions:,.0f} M parameters "
            f"x {BUILD_PEAK_BYTES_PER_PARAMETER:g} bytes + {BUILD_PEAK_BASE_GIB:g} GiB), more than the "
            f"{runner.memory_gib} GiB of builderComputeType={builder_compute_type}; allowed: models up to "
            f"about {int(largest // 1e6):,} M parameters there, "
            + ", ".join([*roomier, "or build it elsewhere and publish it with triton-mme upload"])
        )
    return None


def _minutes(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.0f} min"


def _models_that_fit(
    catalog: Catalog, build: dict[str, float], check: dict[str, float], runner: BuildRunnerSettings
) -> int:
    """How many of the catalog's first models fit both stages on these settings (a binary search: the wall
    times only grow with more models)."""
    names = [entry.name for entry in catalog.models]
    low, high = 0, len(names)
    while low < high:
        middle = (low + high + 1) // 2
        kept = {name: build[name] for name in names[:middle] if name in build}
        if _fits(stage_walls(kept, check, runner.runners), runner):
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class StageWalls:
    """Both stages' estimated wall time on `runners`, in seconds: the serving check runs on the build's
    shards (each shard checks its own candidate), so its time is the slowest build shard's check time."""

    runners: int
    build: float
    check: float


def stage_walls(build: dict[str, float], check: dict[str, float], runners: int) -> StageWalls:
    shards = balanced_shards(build, min(runners, max(1, len(build))))
    return StageWalls(
        runners,
        max((sum(build[m] for m in shard) for shard in shards), default=0.0),
        max((sum(check.get(m, 0.0) for m in shard) for shard in shards), default=0.0),
    )


def _fits(walls: StageWalls, runner: BuildRunnerSettings) -> bool:
    return (
        walls.build <= (runner.timeout_minutes - SETUP_MINUTES) * 60
        and walls.check <= (runner.serving_check_timeout_minutes - SETUP_MINUTES) * 60
    )


def _with(runner: BuildRunnerSettings, **changes: int) -> BuildRunnerSettings | None:
    """`runner` with `changes` (field names), validated as the settings validate them; None when refused."""
    given = {runner.key(name): value for name, value in runner.model_dump().items()}
    given.update({runner.key(name): value for name, value in changes.items()})
    try:
        return BuildRunnerSettings(**given)
    except (SettingsError, ValueError):
        return None


def fitting_runners(
    build: dict[str, float], check: dict[str, float], runner: BuildRunnerSettings, cap: int
) -> BuildRunnerSettings | None:
    """The fewest runners, up to `cap`, on which both stages fit the stage timeouts as they are (and the
    settings accept), or None."""
    for runners in range(1, cap + 1):
        candidate = _with(runner, runners=runners)
        if candidate is not None and _fits(stage_walls(build, check, runners), candidate):
            return candidate
    return None


def fitting_settings(
    build: dict[str, float], check: dict[str, float], runner: BuildRunnerSettings
) -> BuildRunnerSettings | None:
    """One combination of runners and stage timeouts on which both stages fit and the settings accept:
    the fewest runners at today's timeouts, else the fewest runners with each stage's timeout raised to what
    it needs (never lowered); None when no combination within MAX_BUILD_RUNNERS and the 12-hour wait fits."""
    found = fitting_runners(build, check, runner, MAX_BUILD_RUNNERS)
    if found is not None:
        return found
    for runners in range(1, MAX_BUILD_RUNNERS + 1):
        walls = stage_walls(build, check, runners)
        candidate = _with(
            runner,
            runners=runners,
            timeout_minutes=max(runner.timeout_minutes, math.ceil(walls.build / 60) + SETUP_MINUTES),
            serving_check_timeout_minutes=max(
                runner.serving_check_timeout_minutes, math.ceil(walls.check / 60) + SETUP_MINUTES
            ),
        )
        if candidate is not None and _fits(walls, candidate):
            return candidate
    return None


def resolve_build_runners(settings: Settings, catalog: Catalog) -> Settings:
    """`settings` with buildRunners decided where it was not given: the fewest runners, up to
    AUTO_BUILD_RUNNERS_CAP, on which both stages fit their timeouts (1 when none does; build_time_problem
    then says what would). A given buildRunners is kept as given."""
    if "runners" in settings.build.model_fields_set:
        return settings
    times = estimate(catalog)
    build, check = model_seconds(times.build_seconds), model_seconds(times.check_seconds)
    found = fitting_runners(build, check, settings.build, AUTO_BUILD_RUNNERS_CAP)
    if found is None or found.runners == settings.build.runners:
        return settings
    return settings.model_copy(update={"build": found})


def _advice(found: BuildRunnerSettings | None, runner: BuildRunnerSettings) -> str:
    if found is None:
        return ""
    changes = [f"buildRunners={found.runners}"]
    if found.timeout_minutes != runner.timeout_minutes:
        changes.append(f"buildTimeoutMinutes={found.timeout_minutes}")
    if found.serving_check_timeout_minutes != runner.serving_check_timeout_minutes:
        changes.append(f"servingCheckTimeoutMinutes={found.serving_check_timeout_minutes}")
    shown = " ".join(f"-c {change}" for change in changes)
    return f"{shown} (both stages fit; within the account's GPU build quota), or "


def build_time_problem(catalog: Catalog, settings: Settings) -> str | None:
    """Why the catalog's build or serving check cannot finish in its stage's time (one line, with the figures
    and one combination of runners and stage timeouts on which both fit), or None. Estimates:
    sizing.build_time; the serving check runs on the build's shards."""
    times = estimate(catalog)
    runner = resolve_build_runners(settings, catalog).build
    build, check = model_seconds(times.build_seconds), model_seconds(times.check_seconds)
    walls = stage_walls(build, check, runner.runners)
    if _fits(walls, runner):
        return None
    build_budget = (runner.timeout_minutes - SETUP_MINUTES) * 60
    if walls.build > build_budget:
        stage, needed, setting, minutes = "build", walls.build, "buildTimeoutMinutes", runner.timeout_minutes
    else:
        stage, needed = "serving check", walls.check
        setting, minutes = "servingCheckTimeoutMinutes", runner.serving_check_timeout_minutes
    found = fitting_settings(build, check, runner)
    first = _models_that_fit(catalog, build, check, runner)
    return (
        f"the catalog's {stage} needs about {_minutes(needed)} on {plural(runner.runners, 'runner')} "
        f"({len(times.build_seconds):,} archives, estimated from measured seconds per parameter, "
        f"docs/deploy.md#build-time), more than {setting}={minutes} leaves after {SETUP_MINUTES} min of "
        f"set-up; allowed: {_advice(found, runner)}a first catalog that fits, e.g. its first {first:,} "
        "models, the rest built with `triton-mme build --workers N` and published with `triton-mme upload`"
    )

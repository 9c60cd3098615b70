"""Checks that the build runner can build what the catalog asks for, for the endpoint it serves."""

from __future__ import annotations

import math

from triton_mme.core.catalog import Catalog, Format
from triton_mme.core.errors import quoted
from triton_mme.core.platform import (
    CODEBUILD_GPUS,
    GPU_MME_INSTANCE_TYPES,
    TRITON_IMAGES,
    gpu_instance,
    supports_compute_capability,
    triton_image,
)
from triton_mme.core.wording import plural
from triton_mme.model_build.build_memory import (
    BUILD_PEAK_BASE_GIB,
    BUILD_PEAK_BYTES_PER_PARAMETER,
    estimated_build_peak_gib,
    parameter_count,
)
from triton_mme.model_build.build_time import SETUP_MINUTES, estimate, model_seconds, wall_seconds
from triton_mme_cdk.platform_rules import build_gpu_problem, instance_patterns
from triton_mme_cdk.settings import (
    LONG_BUILD_DEADLINE_MINUTES,
    Settings,
    SettingsError,
)


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
    builder = CODEBUILD_GPUS[builder_compute_type]
    instance = gpu_instance(instance_type)
    if builder.compute_capability != instance.compute_capability:
        same_as_builder = [
            name
            for name, other in GPU_MME_INSTANCE_TYPES.items()
            if other.compute_capability == builder.compute_capability
            and supports_compute_capability(triton_image_tag, name)
        ]
        fitting_builders = [
            name
            for name, gpu in CODEBUILD_GPUS.items()
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
        known = ", ".join(tag for tag, image in TRITON_IMAGES.items() if image.tensorrt_requirement)
        return (
            f"the catalog asks for tensorrt, but the TensorRT of tritonImageTag={triton_image_tag} has no "
            f"known pip pin; use a tritonImageTag with one ({known}), or drop 'tensorrt' from the formats"
        )
    return None


def build_memory_problem(catalog: Catalog, *, builder_compute_type: str) -> str | None:
    """The first model whose estimated build peak exceeds the runner's memory (one line), or None.

    Raises CatalogError for a model whose parameters cannot be known before the build.
    """
    runner = CODEBUILD_GPUS[builder_compute_type]
    for entry in catalog.models:
        peak = estimated_build_peak_gib(entry)
        if peak <= runner.memory_gib:
            continue
        largest = (runner.memory_gib - BUILD_PEAK_BASE_GIB) * 2**30 / BUILD_PEAK_BYTES_PER_PARAMETER
        roomier = [
            f"builderComputeType={name} ({gpu.memory_gib} GiB)"
            for name, gpu in CODEBUILD_GPUS.items()
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


def _runners_for(seconds: dict[str, float], budget: float) -> str:
    """The fewest runners (up to the settings' bound) whose balanced shards fit `budget`, as text."""
    from triton_mme_cdk.settings.build import MAX_BUILD_RUNNERS

    if budget <= 0 or max(seconds.values(), default=0.0) > budget:
        return "no number of runners (one model alone takes longer)"
    for runners in range(1, MAX_BUILD_RUNNERS + 1):
        if wall_seconds(seconds, runners) <= budget:
            return f"about {runners}"
    return f"more than {MAX_BUILD_RUNNERS}"


def _models_that_fit(catalog: Catalog, per_model: dict[str, float], runners: int, budget: float) -> int:
    """How many of the catalog's first models fit `budget` on `runners` (a binary search: the wall time only
    grows with more models)."""
    names = [entry.name for entry in catalog.models]
    low, high = 0, len(names)
    while low < high:
        middle = (low + high + 1) // 2
        if wall_seconds({name: per_model[name] for name in names[:middle]}, runners) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def build_time_problem(catalog: Catalog, settings: Settings) -> str | None:
    """Why the catalog's build or serving check cannot finish in its stage's time (one line, with the figures
    and what would fit), or None. Estimates: model_build.build_time; one runner per stage."""
    times = estimate(catalog)
    build = settings.build
    runners = build.runners
    for stage, seconds, setting, minutes, other in (
        ("build", times.build_seconds, "buildTimeoutMinutes", build.timeout_minutes,
         build.serving_check_timeout_minutes),
        ("serving check", times.check_seconds, "servingCheckTimeoutMinutes",
         build.serving_check_timeout_minutes, build.timeout_minutes),
    ):  # fmt: skip
        budget = (minutes - SETUP_MINUTES) * 60
        per_model = model_seconds(seconds)
        needed = wall_seconds(per_model, runners)
        if needed <= budget:
            continue
        # The stage's own timeout may grow until both stages and their queueing fill the 12-hour wait.
        longest = LONG_BUILD_DEADLINE_MINUTES - 2 * build.queue_timeout_minutes - other
        longer = math.ceil(needed / 60) + SETUP_MINUTES
        longer_timeout = f"{setting}={longer}, " if longer <= longest else ""
        return (
            f"the catalog's {stage} needs about {_minutes(needed)} on {plural(runners, 'runner')} "
            f"({len(seconds):,} archives, estimated from measured seconds per parameter, "
            f"docs/deploy.md#build-time), more than {setting}={minutes} leaves after {SETUP_MINUTES} min of "
            f"set-up; allowed: more runners (buildRunners={runners} now; {_runners_for(per_model, budget)} "
            f"would do, within the account's GPU build quota), {longer_timeout}or a first catalog that fits, "
            "e.g. its first "
            f"{_models_that_fit(catalog, per_model, runners, budget):,} models, the rest built with "
            "`triton-mme build --workers N` and published with `triton-mme upload`"
        )
    return None

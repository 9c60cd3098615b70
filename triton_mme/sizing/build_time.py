"""How long a catalog's build and serving check take, known before the build: without PyTorch or the network.

Each archive's time is a base plus its model's parameters (sizing.build_memory.parameter_count) times a
factor per kind of model and format, measured with the benchmark suite on the 2-core workstation (random
weights; `python -m benchmarks --only build` and `--only serving-check`, benchmarks/results/build/ and
benchmarks/results/serving-check/ of 2026-12-01):

- ResNet-50 (25.6 M parameters): ONNX 86.8 s, TorchScript 110.4 s -> 3.4 and 4.3 µs per parameter;
- RoBERTa-large (355.4 M): ONNX 692.9 s (export and fusion) -> 1.95 µs per parameter;
- a 0.7 M-parameter SqueezeNet state dict: 1.0-1.6 s per ONNX archive once the libraries are loaded, which
  sets the base of 1.5 s per archive;
- the serving check (CPU Triton, 3 archives, 406 M parameters in all): 352.7 s -> 0.87 µs per parameter.

Not measured, and so set on the safe side: TensorRT (a GPU build: twice the ONNX figure, the plan being built
from the ONNX export), a text model's TorchScript (its ONNX figure times ResNet-50's TorchScript/ONNX ratio),
the GPU runner's own speed (taken as this workstation's, although it has twice the cores) and its set-up
(SETUP_MINUTES: image pull, pip install, GPU check, TensorRT install). The first deploy's build log prints
each archive's time (`<model>/<format>: ... built in N s`): compare it with the estimate there.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from triton_mme.catalog import Catalog, ModelEntry
from triton_mme.core.formats import Format
from triton_mme.sizing.build_memory import parameter_count

ARCHIVE_BASE_SECONDS = 1.5
# Seconds per parameter, by (image model?, format).
SECONDS_PER_PARAMETER: dict[tuple[bool, Format], float] = {
    (True, Format.ONNX): 3.4e-6,
    (True, Format.TORCHSCRIPT): 4.3e-6,
    (True, Format.TENSORRT): 2 * 3.4e-6,
    (False, Format.ONNX): 1.95e-6,
    (False, Format.TORCHSCRIPT): 1.95e-6 * 110.4 / 86.8,
    (False, Format.TENSORRT): 2 * 1.95e-6,
}
CHECK_BASE_SECONDS = 2.0
CHECK_SECONDS_PER_PARAMETER = 0.87e-6
# A runner's time before its first archive: the image, pip install of requirements-build.txt, the GPU check
# and (with tensorrt) the TensorRT wheel. Not measured on a runner; the safe side of what those steps take.
SETUP_MINUTES = 8


@dataclass(frozen=True)
class TimeEstimate:
    """One catalog's estimated build and serving check, in seconds of runner time."""

    build_seconds: dict[str, float]
    check_seconds: dict[str, float]

    @property
    def archives(self) -> int:
        return len(self.build_seconds)

    @property
    def total_build_seconds(self) -> float:
        return sum(self.build_seconds.values())

    @property
    def total_check_seconds(self) -> float:
        return sum(self.check_seconds.values())


def archive_seconds(entry: ModelEntry, fmt: Format) -> float:
    return ARCHIVE_BASE_SECONDS + parameter_count(entry) * SECONDS_PER_PARAMETER[(entry.is_image, fmt)]


def check_seconds(entry: ModelEntry) -> float:
    return CHECK_BASE_SECONDS + parameter_count(entry) * CHECK_SECONDS_PER_PARAMETER


def estimate(catalog: Catalog, *, skip: Iterable[Format] = ()) -> TimeEstimate:
    """Each archive's estimated build and check time, keyed `<model>/<format>`."""
    skipped = frozenset(skip)
    build: dict[str, float] = {}
    check: dict[str, float] = {}
    for entry in catalog.models:
        for fmt in entry.formats:
            if fmt in skipped:
                continue
            build[f"{entry.name}/{fmt.value}"] = archive_seconds(entry, fmt)
            check[f"{entry.name}/{fmt.value}"] = check_seconds(entry)
    return TimeEstimate(build, check)


def image_change_note(catalog: Catalog, triton_tag: str) -> str | None:
    """What a change of the serving image's tag rebuilds, estimated (None when the catalog has no TensorRT
    plan): a plan loads only with the TensorRT it was built with, and the build cache keys plans by the tag
    (pipeline._keys), while the ONNX and TorchScript archives stay cache hits; the serving check loads every
    archive again in the new image."""
    plans = [archive_seconds(e, Format.TENSORRT) for e in catalog.models if Format.TENSORRT in e.formats]
    if not plans:
        return None
    archives = sum(len(entry.formats) for entry in catalog.models)
    check_minutes = sum(check_seconds(e) * len(e.formats) for e in catalog.models) / 60
    plural = len(plans) > 1
    return (
        f"image {triton_tag}: the catalog's {len(plans)} TensorRT plan{'s are' if plural else ' is'} built "
        f"for its TensorRT; another tag rebuilds {'them' if plural else 'it'} (about {sum(plans) / 60:.0f} "
        f"min of GPU runner time, docs/deploy.md#build-time), takes the other {archives - len(plans)} "
        f"archives from the build cache, and serving-checks all {archives} again (about {check_minutes:.0f} "
        "min)"
    )


def model_seconds(seconds: dict[str, float]) -> dict[str, float]:
    """Per-archive seconds (`<model>/<format>`) summed per model: a shard builds all of a model's formats."""
    totals: dict[str, float] = {}
    for key, value in seconds.items():
        model = key.partition("/")[0]
        totals[model] = totals.get(model, 0.0) + value
    return totals


def catalog_shards(catalog: Catalog, runners: int) -> list[list[str]]:
    """The catalog's model names in at most `runners` non-empty shards of about equal build time."""
    seconds = model_seconds(estimate(catalog).build_seconds)
    return [group for group in balanced_shards(seconds, min(runners, len(seconds))) if group]


def balanced_shards(seconds: dict[str, float], shards: int) -> list[list[str]]:
    """`seconds`' keys in `shards` groups of about equal total time: longest first, each to the group with the
    least time so far (ties to the lowest group), so the same catalog always gives the same groups."""
    groups: list[list[str]] = [[] for _ in range(max(1, shards))]
    heap = [(0.0, index) for index in range(len(groups))]
    for key in sorted(seconds, key=lambda k: (-seconds[k], k)):
        total, index = heapq.heappop(heap)
        groups[index].append(key)
        heapq.heappush(heap, (total + seconds[key], index))
    return [sorted(group) for group in groups]


def wall_seconds(seconds: dict[str, float], runners: int) -> float:
    """The longest group's time when `seconds` is spread over `runners` by balanced_shards."""
    groups = balanced_shards(seconds, runners)
    return max((sum(seconds[key] for key in group) for group in groups), default=0.0)

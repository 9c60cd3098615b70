"""Benchmark 16's local round trip: one catalog with both placements, built, served by serve-local (which
stands in for the inference-component endpoint beside the multi-model routes) and called through the client
by model name only; the client picks each archive's route from the manifest.

A stand-in: the CPU Triton of serve-local, not SageMaker. What it shows is the routing (each archive answered
on the route its placement names) and what a call costs on each route locally, cold and warm.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from benchmarks.checkpoints import write_state_dicts
from benchmarks.context import REPO_ROOT
from benchmarks.process_tree import run_measured
from benchmarks.results import Section

WARM_CALLS = 20
# Two own checkpoints of one architecture: the hot one on an inference component, the other on the MME.
ENTRY = {
    "architecture": "torchvision:squeezenet1_1",
    "formats": ["onnx"],
    "max_batch_size": 2,
    "input_shape": [3, 32, 32],
}
MODELS = {"hot": "dedicated", "tail": "mme"}
# A dynamic dimension of a request (a text model's sequence) is sent with this length.
DYNAMIC_LENGTH = 16


@dataclass(frozen=True)
class RouteFigures:
    """One archive called through the client on the local endpoint."""

    name: str
    route: str  # "inference component <name>" or "TargetModel <name>"
    dedicated: bool
    first_ms: float
    first_cache: str | None  # the local endpoint's X-Local-Model-Cache on the first call
    warm_ms: tuple[float, ...]


def round_trip(
    models_dir: Path, *, warm_calls: int = WARM_CALLS, formats: tuple[str, ...] = ("onnx",)
) -> list[RouteFigures]:
    """Serve the build in `models_dir` locally and call each archive of `formats` by its model name through
    the client."""
    import numpy as np

    from triton_mme.client.invoke import output_names, resolve_target, send
    from triton_mme.client.manifest_source import ManifestSource
    from triton_mme.client.payloads import encode_request
    from triton_mme.core.manifest import MANIFEST_FILE_NAME, Manifest
    from triton_mme.core.samples import NUMPY_DTYPES
    from triton_mme.local_triton.runner import LocalTriton

    manifest_path = models_dir / MANIFEST_FILE_NAME
    source = ManifestSource(str(manifest_path))
    figures = []
    with LocalTriton(models_dir=models_dir, port=0, report=lambda _: None) as served:
        for record in Manifest.read(manifest_path).archives:
            if record.format not in formats:
                continue
            target = resolve_target(source, model=record.name, format=record.format)
            feeds = {
                spec.name: np.zeros(
                    (1, *(DYNAMIC_LENGTH if d == -1 else d for d in spec.dims)),
                    dtype=NUMPY_DTYPES[spec.datatype],
                )
                for spec in record.inputs
            }
            request = encode_request(feeds, output_names(target), binary=True)
            started = time.perf_counter()
            first = send(request, target, local_url=served.url)
            first_ms = (time.perf_counter() - started) * 1000
            warm = []
            for _ in range(warm_calls):
                started = time.perf_counter()
                send(request, target, local_url=served.url)
                warm.append((time.perf_counter() - started) * 1000)
            route = target.route
            figures.append(
                RouteFigures(
                    name=f"{record.name}/{record.format}",
                    route=f"inference component {route.inference_component}"
                    if route.inference_component
                    else f"TargetModel {route.target_model}",
                    dedicated=record.is_dedicated,
                    first_ms=first_ms,
                    first_cache=first.model_cache,
                    warm_ms=tuple(warm),
                )
            )
    return figures


def write_catalog(project: Path) -> Path:
    """Two own checkpoints, a catalog placing one on an inference component, pinned by `triton-mme lock`."""
    checkpoints = write_state_dicts(project / "checkpoints", len(MODELS))
    entries = []
    for (name, placement), path in zip(MODELS.items(), checkpoints, strict=True):
        entry = {
            "name": name,
            "source": f"checkpoint:checkpoints/{path.name}",
            **copy.deepcopy(ENTRY),
            "placement": placement,
        }
        if placement == "dedicated":
            entry["dedicated"] = {"format": "onnx", "copies": 1}
        entries.append(entry)
    catalog = project / "models.yaml"
    catalog.write_text(yaml.safe_dump({"models": entries}, sort_keys=False), encoding="utf-8")
    lock = subprocess.run(
        [sys.executable, "-m", "triton_mme", "lock", "--catalog", str(catalog)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    if lock.returncode != 0:
        raise RuntimeError(f"triton-mme lock of the two-placement catalog failed: {_last_line(lock.stderr)}")
    return catalog


def _last_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[-1] if lines else "no output"


def run_local(section: Section) -> None:
    """Build the two-placement catalog with `triton-mme build`, then the round trip; figures per route."""
    parent = REPO_ROOT / "build" / "benchmarks"
    parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="placement-", dir=parent) as folder:
        project = Path(folder)
        catalog = write_catalog(project)
        out = project / "out"
        command = [sys.executable, "-m", "triton_mme", "build", "--catalog", str(catalog), "--out", str(out),
                   "--no-progress"]  # fmt: skip
        build = run_measured(command, cwd=REPO_ROOT)
        if build.returncode != 0:
            raise RuntimeError(
                f"triton-mme build of the two-placement catalog failed: {_last_line(build.stderr)}"
            )
        figures = round_trip(out)
    record_figures(section, figures)
    section.settings["Local round trip"] = (
        f"{len(MODELS)} own SqueezeNet 1.1 checkpoints (ONNX, 3x32x32), one `placement: dedicated`; built "
        f"with `triton-mme build` in {build.seconds:.0f} s; serve-local; each called by model name through "
        f"the client, once cold then {WARM_CALLS} times"
    )


def record_figures(section: Section, figures: list[RouteFigures]) -> None:
    for figure in figures:
        kind = "inference component" if figure.dedicated else "multi-model endpoint"
        label = f"local round trip, {figure.name} on the {kind}"
        key = figure.name.replace("/", "_")
        section.add(f"local_first_ms.{key}", f"{label}: first call (loads it)", figure.first_ms, "ms")
        section.add_median(f"local_warm_ms.{key}", f"{label}: warm call", list(figure.warm_ms), "ms")
        section.notes.append(
            f"Local round trip: {figure.name} ({'dedicated' if figure.dedicated else 'mme'} in the manifest) "
            f"answered on {figure.route}; first call a {figure.first_cache or 'unreported'} in the cache."
        )

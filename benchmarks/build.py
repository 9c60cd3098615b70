"""6. Build: a full build of the default catalog with random weights vs an unchanged rebuild, both through
the project's CLI as a user runs it (`python -m triton_mme build ...`); the full build's peak resident memory
(whole process tree) and, per archive, its time and peak, next to the SMALL build runner's memory.
"""

from __future__ import annotations

import re
import resource
import sys
from pathlib import Path

import yaml

from benchmarks.context import REPO_ROOT, RunContext
from benchmarks.process_tree import TreeRun, run_measured
from benchmarks.results import Section
from triton_mme.core.platform import PLATFORM

NAME = "build"
TITLE = "6. Build: full build vs unchanged rebuild; peak memory per archive vs the build runner's"
RUNNER = "SMALL"
# The build's line per archive (triton_mme.model_build.pipeline): time and peak of its steps.
ARCHIVE_LINE = re.compile(
    r"^(?P<name>[\w.-]+)/(?P<format>\w+): \S+\.tar\.gz \([\d.]+ MB, built in (?P<seconds>[\d.]+) s, "
    r"peak (?P<peak>[\d.]+) GiB\)$",
    re.MULTILINE,
)
# --quick: one small model instead of the default catalog (ResNet-50 + RoBERTa-large exports).
QUICK_CATALOG = {
    "models": [
        {
            "name": "resnet18",
            "source": "torchvision:resnet18",
            "weights": "random",
            "formats": ["onnx", "torchscript"],
            "max_batch_size": 8,
        }
    ]
}


def tensorrt_available() -> bool:
    try:
        import tensorrt  # noqa: F401
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def build_command(catalog: Path, out_dir: Path) -> list[str]:
    command = [sys.executable, "-m", "triton_mme", "build", "--catalog", str(catalog), "--out", str(out_dir)]
    command += ["--weights", "random"]
    if not tensorrt_available():
        command += ["--skip-format", "tensorrt"]
    return command


def timed_build(command: list[str]) -> float:
    return measured_build(command)[0].seconds


def measured_build(command: list[str]) -> tuple[TreeRun, float]:
    """The build's run (wall time, peak of its process tree, output) and its CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    completed = run_measured(command, cwd=REPO_ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        last = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"build failed (exit {completed.returncode}): {last}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return completed, cpu


def run(ctx: RunContext, section: Section) -> None:
    folder = ctx.scratch / "build"
    folder.mkdir(parents=True, exist_ok=True)
    if ctx.quick:
        catalog = folder / "quick-catalog.yaml"
        catalog.write_text(yaml.safe_dump(QUICK_CATALOG), encoding="utf-8")
        section.notes.append(
            "Quick mode: a one-model catalog (ResNet-18, ONNX + TorchScript), not models.yaml."
        )
    else:
        catalog = REPO_ROOT / "models.yaml"
    out_dir = folder / "models"
    command = build_command(catalog, out_dir)
    section.settings["command"] = " ".join(
        Path(part).name if part == sys.executable else part for part in command
    )
    full, cpu = measured_build(command)
    rebuild, _ = measured_build(command)
    section.add("full", "Full build", full.seconds, "s")
    section.add("rebuild", "Unchanged rebuild", rebuild.seconds, "s")
    section.add("cpu", "Full build, CPU time (user + system)", cpu, "s")
    section.add("archives", "Archives built", len(list(out_dir.glob("*.tar.gz"))), "archives")
    section.ratio("rebuild", "Unchanged rebuild / full build", "rebuild", "full")
    section.target("Unchanged rebuild vs full build", "rebuild", "<=", 0.02)
    section.add(
        "peak", "Full build, peak resident memory (whole process tree)", full.peak_bytes / 2**30, "GiB"
    )
    runner = PLATFORM.codebuild_gpus[RUNNER]
    section.add("runner", f"Build runner {RUNNER} ({runner.gpu}): memory", runner.memory_gib, "GiB")
    section.ratio("peak_share", f"Peak / {RUNNER} runner memory", "peak", "runner")
    section.target(f"Full build's peak vs the {RUNNER} runner's memory", "peak_share", "<=", 0.5)
    archive_peaks = []
    for line in ARCHIVE_LINE.finditer(full.stderr):
        archive = f"{line['name']}/{line['format']}"
        section.add(f"{archive}.seconds", f"{archive}: time", float(line["seconds"]), "s")
        section.add(f"{archive}.peak", f"{archive}: peak resident memory", float(line["peak"]), "GiB")
        archive_peaks.append(f"{archive}.peak")
    # The chart is the memory the title names (the times are in the table): each archive's peak, the whole
    # build's, and the runner's memory they must fit in.
    section.chart = [*archive_peaks, "peak", "runner"]
    section.notes.append(
        "Wall time of one run each in a fresh process, including interpreter and library start-up; "
        "the rebuild reuses the same output folder with nothing changed. Wall time depends on what else "
        "the machine runs (its load average is recorded); CPU time much less."
    )
    section.notes.append(
        "Peak memory of the whole process tree: the resident sets of the build and all its descendants, "
        "summed every 50 ms. Per archive: the build's own report, i.e. the build process's peak (the "
        "kernel's high-water mark, reset at each step) over the archive's steps and its model's load and "
        "reference steps, and the time of those steps (the model's shared steps split between its archives)."
    )

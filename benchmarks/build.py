"""6. Build: a full build of the default catalog with random weights vs an unchanged rebuild, both through
the project's CLI as a user runs it (`python -m triton_mme build ...`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import yaml

from benchmarks.context import REPO_ROOT, RunContext
from benchmarks.results import Section

NAME = "build"
TITLE = "6. Build: full build vs unchanged rebuild"
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
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        last = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"build failed (exit {completed.returncode}): {last}")
    return elapsed


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
    full = timed_build(command)
    rebuild = timed_build(command)
    section.add("full", "Full build", full, "s")
    section.add("rebuild", "Unchanged rebuild", rebuild, "s")
    section.add("archives", "Archives built", len(list(out_dir.glob("*.tar.gz"))), "archives")
    section.ratio("rebuild", "Unchanged rebuild / full build", "rebuild", "full")
    section.target("Unchanged rebuild vs full build", "rebuild", "<=", 0.02)
    section.chart = ["full", "rebuild"]
    section.notes.append(
        "Wall time of one run each in a fresh process, including interpreter and library start-up; "
        "the rebuild reuses the same output folder with nothing changed."
    )

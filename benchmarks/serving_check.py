"""9. The serving check of the default catalog: offline in the local CPU Triton, and on a GPU in the real
sagemaker-tritonserver image where one is present.

Both build the default catalog with random weights (`triton-mme build --weights random`, TensorRT only where
it can be built) and run `triton-mme serving-check` on it as a user or the deployment's GPU stage does, each
in a fresh process: the figures are the command's wall time and, per archive, what its report records.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from benchmarks.build import QUICK_CATALOG, build_command, timed_build
from benchmarks.context import REPO_ROOT, RunContext
from benchmarks.results import Section
from triton_mme.core.platform import PLATFORM
from triton_mme.core.serving_report import SERVING_REPORT_FILE_NAME, ServingReport

NAME = "serving_check"
TITLE = "9. Serving check: the default catalog in the local CPU Triton"
GPU_NAME = "serving_check_gpu"
GPU_TITLE = "10. Serving check on a GPU: load time and GPU memory per archive in sagemaker-tritonserver"
# The seed's figure: 16+ ResNet-50 models used 38.3 % of a 16 GB T4, about 0.38 GB each (REFERENCE.md).
SEED_RESNET50_GB = 0.38


def _built(ctx: RunContext, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    catalog = REPO_ROOT / "models.yaml"
    if ctx.quick:
        catalog = folder / "quick-catalog.yaml"
        catalog.write_text(yaml.safe_dump(QUICK_CATALOG), encoding="utf-8")
    out_dir = folder / "models"
    timed_build(build_command(catalog, out_dir))
    return out_dir


def _check(server: str, build_dir: Path, requests: int) -> tuple[list[str], float, ServingReport]:
    command = [sys.executable, "-m", "triton_mme", "serving-check", "--server", server]
    command += ["--from", str(build_dir), "--requests", str(requests)]
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    report_path = build_dir / SERVING_REPORT_FILE_NAME
    if not report_path.is_file():
        last = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"serving-check wrote no report (exit {completed.returncode}): {last}")
    return command, elapsed, ServingReport.from_json(report_path.read_bytes())


def _record(section: Section, command: list[str], elapsed: float, report: ServingReport) -> None:
    section.settings["command"] = " ".join(
        Path(part).name if part == sys.executable else part for part in command
    )
    section.settings["server"] = report.server
    section.add(
        "total", "serving-check of every archive (server start, load, replay, timing, unload)", elapsed, "s"
    )
    section.add(
        "archives", "Archives checked", sum(1 for a in report.archives if a.skipped is None), "archives"
    )
    section.add("failed", "Archives that failed", len(report.failures), "archives")
    for archive in report.archives:
        key = f"{archive.name}.{archive.format}"
        if archive.skipped is not None:
            section.notes.append(f"{archive.target_model} not checked here: {archive.skipped}")
            continue
        if archive.load_seconds is not None:
            section.add(f"load.{key}", f"{archive.name} ({archive.format}): load", archive.load_seconds, "s")
        if archive.gpu_memory_mib is not None:
            section.add(
                f"memory.{key}",
                f"{archive.name} ({archive.format}): GPU memory, loaded and used",
                archive.gpu_memory_mib / 1024,
                "GiB",
            )
        for batch in archive.batches:
            section.add(
                f"p50.{key}.b{batch.batch_size}",
                f"{archive.name} ({archive.format}): p50 latency, batch {batch.batch_size}",
                batch.latency_p50_ms,
                "ms",
            )
        if not archive.passed:
            section.notes.append(f"{archive.target_model} failed: {archive.error}")
    section.chart = [f.key for f in section.figures if f.key.startswith("load.")]


def run(ctx: RunContext, section: Section) -> None:
    build_dir = _built(ctx, ctx.scratch / NAME)
    command, elapsed, report = _check("local", build_dir, ctx.pick(10, 2))
    _record(section, command, elapsed, report)
    section.notes.append(
        "Local CPU stand-in: each archive runs with ONNX Runtime or TorchScript on CPU inside the python "
        "backend of nvidia-pytriton's tritonserver, with its config.pbtxt as built (docs/local-triton.md); "
        "latencies are this machine's CPU, not the endpoint's GPU. The largest batch is the largest one "
        "InvokeEndpoint's 6 MB carries both ways, at most max_batch_size."
    )


def gpu_unavailable() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return "not run: no GPU"
    if (
        shutil.which(PLATFORM.limits.sagemaker_container.serve_command) is None
        or shutil.which("tritonserver") is None
    ):
        return "not run: no sagemaker-tritonserver here (it runs inside that image, as the GPU stage does)"
    return None


def run_gpu(ctx: RunContext, section: Section) -> None:
    build_dir = _built(ctx, ctx.scratch / GPU_NAME)
    command, elapsed, report = _check("sagemaker", build_dir, ctx.pick(50, 5))
    _record(section, command, elapsed, report)
    section.add(
        "seed.resnet50",
        "Seed: GPU memory per loaded ResNet-50 (16+ on a T4)",
        SEED_RESNET50_GB * 1e9 / 2**30,
        "GiB",
    )
    section.chart = [f.key for f in section.figures if f.key.startswith("memory.")] + ["seed.resnet50"]

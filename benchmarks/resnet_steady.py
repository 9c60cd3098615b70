"""2. ResNet-50 steady state on CPU: batch-1 latency and batch-8 throughput for PyTorch eager, the
notebook-style ONNX export and the project's ONNX artifact, measured side by side.
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks import artifacts
from benchmarks.context import RunContext
from benchmarks.onnx_load import load_model_dir, unpack
from benchmarks.ort_options import describe, session_options
from benchmarks.results import Section
from benchmarks.timing import measure_side_by_side, throughput
from triton_mme.core.formats import Format

NAME = "resnet50"
TITLE = "2. ResNet-50 steady state (CPU)"
LABELS = {"eager": "PyTorch eager fp32", "notebook": "Notebook-style ONNX", "project": "Project ONNX"}


def _eager_call(module: object, batch: int) -> Callable[[], object]:
    import torch

    images = torch.randn(batch, 3, 224, 224)

    def call() -> object:
        with torch.no_grad():
            return module(images)  # type: ignore[operator]

    return call


def run(ctx: RunContext, section: Section) -> None:
    import torch

    project_archive, _ = artifacts.project_archive(ctx, artifacts.resnet50_entry(), Format.ONNX)
    notebook_archive = artifacts.notebook_resnet50(ctx)
    models = {
        "notebook": load_model_dir(unpack(notebook_archive, ctx.scratch / "steady" / "notebook")),
        "project": load_model_dir(unpack(project_archive, ctx.scratch / "steady" / "project")),
    }
    eager = artifacts.resnet50_module()
    section.settings["PyTorch eager"] = f"fp32, eval + no_grad, {torch.get_num_threads()} intra-op threads"
    for side, model in models.items():
        section.settings[LABELS[side]] = describe(session_options(model.config))

    for batch, warmup, repeat in (
        (1, ctx.pick(10, 2), ctx.pick(100, 8)),
        (8, ctx.pick(3, 1), ctx.pick(24, 4)),
    ):
        calls = {"eager": _eager_call(eager, batch)}
        calls |= {side: model.timed_call(batch) for side, model in models.items()}
        samples = measure_side_by_side(calls, warmup=warmup, repeat=repeat)
        for side, timed in samples.items():
            section.add_samples(
                f"{side}.b{batch}", f"{LABELS[side]}, batch {batch}", timed, unit="ms", scale=1000
            )
            if batch > 1:
                section.add(
                    f"{side}.b{batch}.throughput",
                    f"{LABELS[side]}, batch {batch} throughput",
                    throughput(timed, batch),
                    "images/s",
                )

    section.ratio(
        "project_vs_eager.b1", "Project ONNX / PyTorch eager, batch-1 p50 latency", "project.b1", "eager.b1"
    )
    section.ratio(
        "project_vs_notebook.b1",
        "Project ONNX / notebook-style ONNX, batch-1 p50 latency",
        "project.b1",
        "notebook.b1",
    )
    section.ratio(
        "project_vs_eager.b8.throughput",
        "Project ONNX / PyTorch eager, batch-8 throughput",
        "project.b8.throughput",
        "eager.b8.throughput",
    )
    section.ratio(
        "project_vs_notebook.b8.throughput",
        "Project ONNX / notebook-style ONNX, batch-8 throughput",
        "project.b8.throughput",
        "notebook.b8.throughput",
    )
    section.target("ResNet-50 ONNX batch-1 latency vs PyTorch eager", "project_vs_eager.b1", "<=", 0.6)
    section.target(
        "ResNet-50 ONNX batch-1 latency vs notebook-style export", "project_vs_notebook.b1", "<=", 1.0
    )
    section.chart = ["eager.b8.throughput", "notebook.b8.throughput", "project.b8.throughput"]
    section.notes.append(
        "Latency per call with random inputs; the three contenders alternate in rounds after their "
        "warm-up. Throughput = images / total timed seconds at batch 8."
    )

"""7. GPU: the project's ResNet-50 archives on CUDA vs PyTorch eager fp32. Runs only where torch sees a
CUDA device. Load time and GPU memory of every archive in the real server are section 10 (serving_check_gpu).

- side by side: eager fp32, the TorchScript artifact as shipped (fp32) and the same artifact cast to
  fp16 at load, host-to-host (inputs copied in, outputs copied out) at batch 1, 8 and 128.
- memory: several copies of the TorchScript artifact loaded side by side, as an MME holds models.
- cold start: fresh processes, project ONNX vs notebook-style ONNX on CUDA ONNX Runtime (where it
  exists) and the project's TorchScript archive.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import artifacts
from benchmarks.build import tensorrt_available
from benchmarks.context import RunContext
from benchmarks.onnx_load import unpack
from benchmarks.results import Section
from benchmarks.timing import measure_side_by_side, run_child, throughput
from triton_mme.core.formats import Format
from triton_mme.core.naming import MODEL_VERSION

NAME = "gpu"
TITLE = "7. GPU: ResNet-50 TorchScript (and TensorRT / ONNX where present) vs PyTorch eager"
BATCHES = (1, 8, 128)
# ResNet-50 at 224x224: 4.09 GMAC per image = 8.2 GFLOP (forward pass).
RESNET50_GFLOP_PER_IMAGE = 8.2
# NVIDIA datasheet peaks without sparsity, TFLOPS: (fp32, fp16 tensor core).
PUBLISHED_PEAK_TFLOPS = {
    "T4": (8.1, 65.0),
    "A10G": (31.2, 125.0),
    "A10": (31.2, 125.0),
    "L4": (30.3, 121.0),
    "V100": (15.7, 125.0),
    "A100": (19.5, 312.0),
    "H100": (67.0, 989.0),
    "H200": (67.0, 989.0),
}
LABELS = {
    "eager": "PyTorch eager fp32",
    "torchscript": "TorchScript artifact fp32",
    "torchscript_fp16": "TorchScript artifact cast to fp16",
}


def unavailable() -> str | None:
    try:
        import torch
    except ImportError:
        return "not run: no GPU (PyTorch is not installed)"
    if not torch.cuda.is_available():
        return "not run: no GPU"
    return None


def published_peak(gpu: str) -> tuple[float, float] | None:
    for model, peak in PUBLISHED_PEAK_TFLOPS.items():
        if model.lower() in gpu.lower().replace("-", " ").split():
            return peak
    return None


def host_to_host(module: Any, images: np.ndarray) -> Callable[[], object]:
    """numpy in, numpy out, as a Triton backend copies request and response tensors."""
    import torch

    def call() -> object:
        with torch.inference_mode():
            return module(torch.from_numpy(images).cuda()).float().cpu().numpy()

    return call


def _side_by_side(ctx: RunContext, section: Section, torchscript_file: Path, gpu: str) -> None:
    import torch

    from triton_mme.model_build import runtimes

    modules = {
        "eager": artifacts.resnet50_module().cuda(),
        "torchscript": runtimes.load_torchscript(torchscript_file, device="cuda"),
        "torchscript_fp16": runtimes.load_torchscript(torchscript_file, device="cuda").half(),
    }
    rng = np.random.default_rng(0)
    peak = published_peak(gpu)
    for batch in BATCHES:
        images = rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)
        calls = {
            name: host_to_host(module, images.astype(np.float16) if name.endswith("fp16") else images)
            for name, module in modules.items()
        }
        samples = measure_side_by_side(calls, warmup=ctx.pick(10, 2), repeat=ctx.pick(60, 6), rounds=3)
        for name, timed in samples.items():
            rate = throughput(timed, batch)
            section.add(f"{name}.b{batch}", f"{LABELS[name]}, batch {batch}", rate, "images/s")
            if peak is not None:
                tflops = peak[1] if name.endswith("fp16") else peak[0]
                section.add(
                    f"{name}.b{batch}.peak",
                    f"{LABELS[name]}, batch {batch}, share of published peak",
                    100 * rate * RESNET50_GFLOP_PER_IMAGE / (tflops * 1000),
                    "%",
                )
        for name in ("torchscript", "torchscript_fp16"):
            section.ratio(
                f"{name}_vs_eager.b{batch}",
                f"{LABELS[name]} / eager fp32, batch {batch}",
                f"{name}.b{batch}",
                f"eager.b{batch}",
            )
    torch.cuda.empty_cache()
    if peak is None:
        section.notes.append(f"No published peak on record for '{gpu}'; shares of peak not computed.")


def _memory_per_copy(ctx: RunContext, section: Section, torchscript_file: Path) -> None:
    import torch

    from triton_mme.model_build import runtimes

    copies = ctx.pick(16, 4)
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    loaded = []
    one_image = torch.randn(1, 3, 224, 224)
    for _ in range(copies):
        module = runtimes.load_torchscript(torchscript_file, device="cuda")
        with torch.inference_mode():
            module(one_image.cuda())  # Triton's warm-up request: buffers and workspaces are allocated
        loaded.append(module)
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    section.add("memory.copies", "TorchScript copies loaded side by side", copies, "models")
    section.add(
        "memory.per_model",
        "GPU memory per loaded TorchScript ResNet-50",
        (free_before - free_after) / copies / 1e9,
        "GB",
    )
    del loaded
    torch.cuda.empty_cache()


def _cold_starts(ctx: RunContext, section: Section, archives: dict[str, Path]) -> None:
    import onnxruntime as ort

    repetitions = ctx.pick(5, 2)
    sides = {"project_torchscript": archives["torchscript"]}
    if "CUDAExecutionProvider" in ort.get_available_providers():
        sides |= {"notebook_onnx": archives["notebook"], "project_onnx": archives["onnx"]}
    else:
        section.notes.append(
            "Cold start vs the notebook-style ONNX archive not run: no CUDA ONNX Runtime here "
            "(onnxruntime-gpu is not installed)."
        )
    runs: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(repetitions):
        for side, archive in sides.items():
            runs[side].append(
                run_child("benchmarks.cold_start_child", [str(archive), "--device", "cuda"])["total"]
            )
    for side, values in runs.items():
        section.add_median(f"cold.{side}", f"Cold start on CUDA, {side.replace('_', ' ')}", values, "s")
    if "notebook_onnx" in runs:
        section.ratio(
            "cold",
            "Project ONNX / notebook-style ONNX cold start on CUDA",
            "cold.project_onnx",
            "cold.notebook_onnx",
        )
        section.target("GPU cold start vs notebook-style archive", "cold", "<=", 0.5)


def run(ctx: RunContext, section: Section) -> None:
    import torch

    gpu = str(torch.cuda.get_device_name(0))
    formats = (Format.ONNX, Format.TORCHSCRIPT, *((Format.TENSORRT,) if tensorrt_available() else ()))
    out_dir, manifest = artifacts.project_build(ctx, artifacts.resnet50_entry(formats))
    section.settings["GPU"] = gpu
    section.settings["formats built"] = ", ".join(a.format for a in manifest.archives)

    torchscript = manifest.find("resnet50", Format.TORCHSCRIPT.value)
    model_dir = unpack(out_dir / torchscript.target_model, ctx.scratch / "gpu" / "torchscript")
    torchscript_file = model_dir / MODEL_VERSION / "model.pt"
    _side_by_side(ctx, section, torchscript_file, gpu)
    _memory_per_copy(ctx, section, torchscript_file)
    archives = {record.format: out_dir / record.target_model for record in manifest.archives}
    _cold_starts(ctx, section, archives | {"notebook": artifacts.notebook_resnet50(ctx)})

    last = BATCHES[-1]
    section.target(
        f"fp16 TorchScript vs eager fp32, batch {last}", f"torchscript_fp16_vs_eager.b{last}", ">=", 2.0
    )
    section.target("GPU memory per loaded ResNet-50", "memory.per_model", "<=", 0.19)
    section.chart = [f"{name}.b{last}" for name in LABELS]
    section.notes.append(
        "The build ships TorchScript in fp32 only; the fp16 figures cast that artifact with "
        "module.half() at load and send FP16 inputs, which Triton's PyTorch backend would need as a "
        "separate fp16 artifact."
    )

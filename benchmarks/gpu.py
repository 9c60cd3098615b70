"""7. GPU: the project's archives on CUDA as Triton's backends run them, through model_build.profile (the
same code the GPU build runner uses), vs PyTorch eager fp32. Runs only where torch sees a CUDA device.
"""

from __future__ import annotations

from benchmarks.context import RunContext
from benchmarks.results import Section

NAME = "gpu"
TITLE = "7. GPU: TorchScript (and TensorRT / ONNX where present) vs PyTorch eager"


def unavailable() -> str | None:
    try:
        import torch
    except ImportError:
        return "not run: no GPU (PyTorch is not installed)"
    if not torch.cuda.is_available():
        return "not run: no GPU"
    return None


def run(ctx: RunContext, section: Section) -> None:
    try:
        import model_build.profile  # noqa: F401
    except ImportError:
        raise RuntimeError(
            "model_build.profile is not in this checkout; the GPU section runs through it"
        ) from None
    raise RuntimeError("the GPU section is not wired to model_build.profile yet")

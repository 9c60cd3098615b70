"""How close a model's outputs must be to PyTorch's: one tolerance per format, precision and device kind.

The build compares every export with PyTorch on the machine that exported it (model_build.parity); the
serving check compares what a server answers with the golden outputs PyTorch computed on the build's CPU
(serving_check). A wrong graph, wrong weights or a wrong layout give differences of order one, far above
every tolerance here; the tolerances only absorb the arithmetic each runtime is allowed to do differently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    """|actual - expected| <= atol + rtol * |expected|, element-wise (numpy.allclose semantics)."""

    atol: float
    rtol: float

    def holds(self, actual: np.ndarray, expected: np.ndarray) -> bool:
        difference = np.abs(np.asarray(actual, np.float64) - np.asarray(expected, np.float64))
        return bool(np.all(difference <= self.atol + self.rtol * np.abs(np.asarray(expected, np.float64))))

    def describe(self) -> str:
        return f"atol {self.atol:g} + rtol {self.rtol:g} x |reference|"


def max_abs_error(actual: np.ndarray, expected: np.ndarray) -> float:
    difference = np.abs(np.asarray(actual, np.float64) - np.asarray(expected, np.float64))
    return float(difference.max()) if difference.size else 0.0


# FP32 on a CPU (ONNX Runtime, TorchScript, the local stand-in): the same IEEE float32 arithmetic as PyTorch,
# reordered by fusions and other kernels only; tight.
FP32 = Tolerance(atol=1e-4, rtol=1e-3)
# FP16 (a TensorRT plan built with precision fp16, ONNX Runtime's TensorRT accelerator in FP16): every
# activation is rounded to 11 significant bits; loose, but still far below what a wrong graph gives.
FP16 = Tolerance(atol=5e-2, rtol=5e-2)
# FP32 on a GPU (ONNX Runtime's CUDA provider, libtorch on CUDA, a TensorRT plan built in fp32): cuDNN and
# cuBLAS choose their algorithms per GPU and shape (another summation order), and on Ampere and newer
# they run convolutions and matrix products in TF32 by default (cuDNN's convolutions in libtorch, ONNX
# Runtime's `use_tf32`, TensorRT's TF32 builder flag), which rounds the inputs of those products to 11
# significant bits, as FP16 does, while accumulating and storing activations in FP32. Its error is
# therefore below FP16's: half of the FP16 tolerance. Not measured on a GPU in this project's tests.
GPU_FP32 = Tolerance(atol=2.5e-2, rtol=2.5e-2)

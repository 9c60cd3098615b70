"""Numerical parity between an export and PyTorch: the gate that stops a wrong model from shipping."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


class ParityError(RuntimeError):
    """An export whose outputs differ from PyTorch's beyond the stated tolerance."""


@dataclass(frozen=True)
class Tolerance:
    """|actual - expected| <= atol + rtol * |expected|, element-wise (numpy.allclose semantics)."""

    atol: float
    rtol: float


# fp32 exports reorder float arithmetic only (fusions, other kernels): tight.
FP32 = Tolerance(atol=1e-4, rtol=1e-3)
# fp16 engines round every activation to 11 significant bits: loose, but still catches a wrong graph.
FP16 = Tolerance(atol=5e-2, rtol=5e-2)


def compare(
    where: str, actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], tolerance: Tolerance
) -> dict[str, float]:
    """Max absolute error per output; raises ParityError naming the first output out of tolerance."""
    errors: dict[str, float] = {}
    for name, reference in expected.items():
        if name not in actual:
            raise ParityError(f"{where}: output '{name}' is missing (got {sorted(actual)})")
        value = np.asarray(actual[name], dtype=np.float64)
        wanted = np.asarray(reference, dtype=np.float64)
        if value.shape != wanted.shape:
            raise ParityError(
                f"{where}: output '{name}' has shape {value.shape}, PyTorch gives {wanted.shape}"
            )
        difference = np.abs(value - wanted)
        errors[name] = float(difference.max()) if difference.size else 0.0
        if not np.all(difference <= tolerance.atol + tolerance.rtol * np.abs(wanted)):
            raise ParityError(
                f"{where}: output '{name}' differs from PyTorch by up to {errors[name]:.3g} "
                f"(allowed atol {tolerance.atol:g} + rtol {tolerance.rtol:g})"
            )
    return errors

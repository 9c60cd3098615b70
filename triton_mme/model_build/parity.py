"""Numerical parity between an export and PyTorch: the gate that stops a wrong model from shipping."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from triton_mme.core.tolerances import FP16, FP32, Tolerance, max_abs_error

__all__ = ["FP16", "FP32", "ParityError", "Tolerance", "compare"]


class ParityError(RuntimeError):
    """An export whose outputs differ from PyTorch's beyond the stated tolerance."""


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
        errors[name] = max_abs_error(value, wanted)
        if not tolerance.holds(value, wanted):
            raise ParityError(
                f"{where}: output '{name}' differs from PyTorch by up to {errors[name]:.3g} "
                f"(allowed atol {tolerance.atol:g} + rtol {tolerance.rtol:g})"
            )
    return errors

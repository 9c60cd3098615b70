"""Random model inputs shaped by a tensor description; used by verification and benchmarks alike."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from triton_mme.core.manifest import TensorSpec

NUMPY_DTYPES: dict[str, type[np.generic]] = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
}
# Token ids stay below the smallest vocabulary the project uses, so any text model accepts them.
TOKEN_ID_LIMIT = 100
# Positional names (TorchScript's INPUT__0, ...) say nothing about meaning; ones are valid as token
# ids and as attention masks alike.
POSITIONAL_NAME = re.compile(r"^INPUT__\d+$")


def sample_inputs(specs: Sequence[TensorSpec], batch_size: int, *, seed: int = 0) -> dict[str, np.ndarray]:
    """One random batch for the given inputs (dims exclude the batch dimension)."""
    rng = np.random.default_rng(seed)
    batch: dict[str, np.ndarray] = {}
    for spec in specs:
        if spec.datatype not in NUMPY_DTYPES:
            raise ValueError(f"input '{spec.name}': datatype {spec.datatype} has no sample generator")
        dtype = NUMPY_DTYPES[spec.datatype]
        shape = (batch_size, *(d if d > 0 else 1 for d in spec.dims))
        if np.issubdtype(dtype, np.floating):
            batch[spec.name] = rng.standard_normal(shape).astype(dtype)
        elif "mask" in spec.name or POSITIONAL_NAME.match(spec.name):
            # A fully masked row has no defined attention output; keep every token visible.
            batch[spec.name] = np.ones(shape, dtype=dtype)
        else:
            batch[spec.name] = rng.integers(0, TOKEN_ID_LIMIT, size=shape).astype(dtype)
    return batch

"""How large a model's reply can be, and how many rows one InvokeEndpoint call can carry back.

A text encoder's outputs are recorded with a dynamic sequence dimension (`last_hidden_state: [-1, 1024]`),
but its inputs are fixed at the catalog's `sequence_length` (the manifest records it as the length of
every text input), so the dynamic dimension is at most that length and the largest reply is known before a
request is sent. The build uses the same arithmetic to say how many rows a request of a catalog entry can
carry (model_build.request_rows).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from triton_mme.core.manifest import TensorSpec
from triton_mme.core.platform import PLATFORM
from triton_mme.core.samples import NUMPY_DTYPES

# The JSON header of a binary reply: model name and version, then name, datatype, shape and size per
# output. Counted generously so an estimate never says a batch fits when it does not.
REPLY_HEADER_BYTES = 256
REPLY_HEADER_BYTES_PER_OUTPUT = 192
FP32_BYTES = 4


def sequence_bound(inputs: Sequence[TensorSpec]) -> int | None:
    """The fixed length every input of a text model shares (its catalog `sequence_length`); None when
    the inputs are not all one-dimensional with one fixed length."""
    lengths = {spec.dims[0] for spec in inputs if len(spec.dims) == 1}
    if not inputs or len(lengths) != 1 or any(len(spec.dims) != 1 for spec in inputs):
        return None
    (length,) = lengths
    return length if length > 0 else None


def reply_bytes_per_sample(outputs: Sequence[TensorSpec], sequence_length: int | None = None) -> int | None:
    """Raw bytes of one sample's outputs at their largest, a dynamic dimension counted at the sequence
    bound; None where a size cannot be bounded (no bound, or a datatype without a fixed width)."""
    total = 0
    for spec in outputs:
        if spec.datatype not in NUMPY_DTYPES:
            return None
        dims = [sequence_length if d < 0 else d for d in spec.dims]
        if any(d is None for d in dims):
            return None
        total += math.prod(d for d in dims if d is not None) * np.dtype(NUMPY_DTYPES[spec.datatype]).itemsize
    return total


def reply_overhead(output_count: int) -> int:
    return REPLY_HEADER_BYTES + REPLY_HEADER_BYTES_PER_OUTPUT * output_count


def rows_that_fit(
    per_sample: int, output_count: int, limit: int = PLATFORM.limits.sagemaker_max_payload_bytes.value
) -> int:
    """The most rows whose reply comes back through InvokeEndpoint (0: not even one)."""
    if per_sample <= 0:
        return 1 << 30
    return max((limit - reply_overhead(output_count)) // per_sample, 0)

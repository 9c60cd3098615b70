"""Golden data: a few inputs of one archive and PyTorch's outputs for them, to replay against a server.

The build writes it beside the manifest as `golden-<content hash>.npz` (role `golden` in the record's
`files`, core.naming) and the serving check replays it against the archive as served. Anyone can do the
same by hand: it is NumPy's .npz format (a zip of .npy arrays) and `numpy.load` reads it (pickles are never
stored, so `allow_pickle` stays off). Arrays are keyed `input:<tensor>` and `output:<tensor>` with the
archive's own tensor names, and hold GOLDEN_ROWS samples along the batch axis; the outputs are PyTorch's
(fp32, on the build's CPU) for exactly those inputs.

A larger batch is built by repeating the rows (`batch`): samples are independent in eval mode, so row i of
any batch must answer like golden row i % GOLDEN_ROWS, which also exercises the server's batched kernels.

The writer fixes every zip entry's time and attributes, so the same arrays always give the same bytes and
so the same content-addressed name; the reader accepts only what the writer produces (stored entries named
by the key rule, within a size bound).
"""

from __future__ import annotations

import io
import math
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from triton_mme.core.errors import UserError, first_line, quoted
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.samples import NUMPY_DTYPES

# Two samples: row 0 is the batch-1 request, and a larger batch alternates two different rows (a server
# that mixed up the rows of a batch would answer row 1 with row 0's outputs).
GOLDEN_ROWS = 2
INPUT_PREFIX = "input:"
OUTPUT_PREFIX = "output:"
NPY_SUFFIX = ".npy"
# What a golden file may hold: its rows of the largest tensors the limits allow (core.limits) are far below.
MAX_GOLDEN_BYTES = 512 * 1024 * 1024
_ENTRY = re.compile(rf"(?P<kind>{INPUT_PREFIX}|{OUTPUT_PREFIX})(?P<name>[^\x00/\\]{{1,256}})\{NPY_SUFFIX}")
# The zip epoch: entry times carry no information, so bytes depend on the arrays only.
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


class GoldenError(UserError, ValueError):
    """Golden data that cannot be used; the message is one line."""


@dataclass(frozen=True)
class GoldenData:
    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]

    @property
    def rows(self) -> int:
        return len(next(iter(self.inputs.values())))

    def batch(self, size: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Inputs and expected outputs for a batch of `size`: golden rows repeated in order."""
        order = np.arange(size) % self.rows
        return (
            {name: np.ascontiguousarray(value[order]) for name, value in self.inputs.items()},
            {name: value[order] for name, value in self.outputs.items()},
        )

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
            for prefix, arrays in ((INPUT_PREFIX, self.inputs), (OUTPUT_PREFIX, self.outputs)):
                for name in sorted(arrays):
                    entry = zipfile.ZipInfo(f"{prefix}{name}{NPY_SUFFIX}", date_time=_FIXED_TIME)
                    entry.external_attr = 0o644 << 16
                    array = io.BytesIO()
                    np.lib.format.write_array(array, np.ascontiguousarray(arrays[name]), allow_pickle=False)
                    archive.writestr(entry, array.getvalue())
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, *, where: str) -> GoldenData:
        """Parse a golden file; GoldenError (one line, starting with `where`) for anything else."""
        if len(data) > MAX_GOLDEN_BYTES:
            raise GoldenError(f"{where}: {len(data):,} bytes; allowed at most {MAX_GOLDEN_BYTES:,}")
        arrays: dict[str, dict[str, np.ndarray]] = {INPUT_PREFIX: {}, OUTPUT_PREFIX: {}}
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for entry in archive.infolist():
                    named = _ENTRY.fullmatch(entry.filename)
                    if named is None or entry.compress_type != zipfile.ZIP_STORED:
                        raise GoldenError(
                            f"{where}: entry {quoted(entry.filename)} is not a stored "
                            f"'{INPUT_PREFIX}<tensor>.npy' or '{OUTPUT_PREFIX}<tensor>.npy' array"
                        )
                    arrays[named["kind"]][named["name"]] = _read_npy(
                        archive.read(entry), where, entry.filename
                    )
        except GoldenError:
            raise
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as error:
            raise GoldenError(f"{where}: not a golden .npz file ({first_line(error)})") from None
        golden = cls(inputs=arrays[INPUT_PREFIX], outputs=arrays[OUTPUT_PREFIX])
        golden._check_rows(where)
        return golden

    def _check_rows(self, where: str) -> None:
        if not self.inputs or not self.outputs:
            raise GoldenError(f"{where}: holds no inputs or no outputs")
        counts = {len(a) if a.ndim else 0 for a in [*self.inputs.values(), *self.outputs.values()]}
        if len(counts) != 1 or 0 in counts:
            raise GoldenError(f"{where}: arrays disagree on the number of rows ({sorted(counts)})")

    def check_against(
        self, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec], *, where: str
    ) -> None:
        """The arrays fit the archive's tensors: the same names, datatypes and per-sample dims."""
        for kind, arrays, specs in (("inputs", self.inputs, inputs), ("outputs", self.outputs, outputs)):
            if set(arrays) != {spec.name for spec in specs}:
                raise GoldenError(
                    f"{where}: golden {kind} {sorted(arrays)} but the archive declares "
                    f"{[spec.name for spec in specs]}"
                )
            for spec in specs:
                value = arrays[spec.name]
                wanted = np.dtype(NUMPY_DTYPES.get(spec.datatype, np.void))
                # Outputs are PyTorch's in fp32 whatever the archive serves (an fp16 plan answers in fp16).
                if kind == "inputs" and value.dtype != wanted:
                    raise GoldenError(
                        f"{where}: golden input '{spec.name}' is {value.dtype}, the archive takes "
                        f"{spec.datatype}"
                    )
                if len(value.shape) != len(spec.dims) + 1 or any(
                    d not in (-1, g) for d, g in zip(spec.dims, value.shape[1:], strict=True)
                ):
                    raise GoldenError(
                        f"{where}: golden {kind[:-1]} '{spec.name}' has shape {value.shape}, the archive "
                        f"declares {list(spec.dims)} per sample"
                    )


def _read_npy(raw: bytes, where: str, entry: str) -> np.ndarray:
    """One .npy array whose header is checked against the bytes that follow it before anything is
    allocated: a header promising terabytes is refused, not a MemoryError."""
    stream = io.BytesIO(raw)
    version = np.lib.format.read_magic(stream)
    read_header = {
        (1, 0): np.lib.format.read_array_header_1_0,
        (2, 0): np.lib.format.read_array_header_2_0,
    }.get(version)
    if read_header is None:
        raise GoldenError(f"{where}: entry {quoted(entry)} is .npy version {version}; allowed 1.0 and 2.0")
    shape, _, dtype = read_header(stream)
    needed = math.prod(shape) * dtype.itemsize
    left = len(raw) - stream.tell()
    if not dtype.hasobject and needed > left:
        raise GoldenError(
            f"{where}: entry {quoted(entry)} promises {needed:,} bytes of {dtype} but holds {left:,}"
        )
    stream.seek(0)
    return np.lib.format.read_array(stream, allow_pickle=False)


def golden_data(
    inputs: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray], *, rows: int = GOLDEN_ROWS
) -> GoldenData:
    """Golden data from arrays keyed by the archive's tensor names; outputs are stored in float32 when
    they are floating point (PyTorch's reference dtype)."""
    kept_outputs = {
        name: (value.astype(np.float32) if np.issubdtype(value.dtype, np.floating) else value)[:rows]
        for name, value in outputs.items()
    }
    return GoldenData({name: value[:rows] for name, value in inputs.items()}, kept_outputs)

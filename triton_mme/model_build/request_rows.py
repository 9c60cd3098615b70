"""How many rows one request of each text model can carry, said before the build starts.

A text encoder's reply grows with sequence_length x hidden_size per row; past InvokeEndpoint's reply limit
the endpoint returns nothing. The build knows the architecture (the Hugging Face config) before it
exports, so it refuses an entry whose single row cannot come back, and says in one line what a larger
max_batch_size is clamped to per request (the client refuses such a batch before sending).
"""

from __future__ import annotations

from triton_mme.catalog import Catalog, CatalogError, ModelEntry
from triton_mme.core.formats import Weights
from triton_mme.core.platform import PLATFORM
from triton_mme.core.replies import FP32_BYTES, reply_overhead, rows_that_fit


def text_encoder_reply_bytes(hidden_size: int, sequence_length: int) -> tuple[int, int]:
    """(bytes per row, outputs) of a Hugging Face encoder as the build exports it: last_hidden_state
    [sequence_length, hidden_size] and pooler_output [hidden_size], FP32 (counting the pooler even where a
    model has none keeps the estimate on the safe side)."""
    return (sequence_length * hidden_size + hidden_size) * FP32_BYTES, 2


def request_rows(
    name: str, *, max_batch_size: int, hidden_size: int, sequence_length: int
) -> tuple[int, str | None]:
    """The rows one request of a text model can carry: max_batch_size, or fewer with one line saying what
    it is clamped to and why. CatalogError when not even one row's reply fits."""
    per_row, outputs = text_encoder_reply_bytes(hidden_size, sequence_length)
    overhead = reply_overhead(outputs)
    fits = rows_that_fit(per_row, outputs)
    limit = (
        f"InvokeEndpoint's {PLATFORM.limits.sagemaker_max_payload_bytes.value / 2**20:.0f} MiB reply limit"
    )
    if fits == 0:
        longest = (PLATFORM.limits.sagemaker_max_payload_bytes.value - overhead) // (
            hidden_size * FP32_BYTES
        ) - 1
        raise CatalogError(
            f"model {name!r}: one row's reply is {per_row + overhead:,} bytes (sequence_length "
            f"{sequence_length} x hidden_size {hidden_size}, FP32), over {limit}; allowed: a "
            f"sequence_length of at most {longest}"
        )
    if fits >= max_batch_size:
        return max_batch_size, None
    over = per_row * (fits + 1) + overhead
    return fits, (
        f"model {name!r}: a request carries at most {fits} of its max_batch_size {max_batch_size} rows: "
        f"the reply to {fits + 1} would be {over:,} bytes, over {limit} (Triton still batches up to "
        f"{max_batch_size} rows across requests)"
    )


def _hidden_size(entry: ModelEntry) -> int | None:
    """The architecture's hidden size where the project has its config without a download."""
    from triton_mme.sizing.hf_config import resolve_hf_config

    if entry.source_kind != "huggingface":
        return None
    if entry.hf_config is None and entry.weights is not Weights.RANDOM:
        return None  # the pretrained config is only known after its download
    size = resolve_hf_config(entry).get("hidden_size")
    return int(size) if isinstance(size, int) else None


def request_row_notes(catalog: Catalog, *, only: str | None = None) -> list[str]:
    """One line per text model whose requests carry fewer rows than its max_batch_size."""
    notes = []
    for entry in catalog.models:
        if only is not None and entry.name != only:
            continue
        hidden_size = _hidden_size(entry)
        if hidden_size is None:
            continue
        _, note = request_rows(
            entry.name,
            max_batch_size=entry.max_batch_size,
            hidden_size=hidden_size,
            sequence_length=entry.text_length,
        )
        if note:
            notes.append(note)
    return notes

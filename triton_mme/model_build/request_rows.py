"""How many rows one request of each text model can carry, said before the build starts.

A text encoder's reply grows with sequence_length x hidden_size per row; past InvokeEndpoint's reply limit
the endpoint returns nothing. The build knows the architecture (the Hugging Face config) before it
exports, so it refuses an entry whose single row cannot come back, and says in one line what a larger
max_batch_size is clamped to per request (the client refuses such a batch before sending).
"""

from __future__ import annotations

from triton_mme.core.catalog import Catalog, ModelEntry, Weights
from triton_mme.core.replies import request_rows


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

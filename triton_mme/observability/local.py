"""Per-model figures of a local endpoint: its Triton log (serve-local), optionally the callers' records."""

from __future__ import annotations

from pathlib import Path

from triton_mme.core.errors import UserError
from triton_mme.observability.caller_records import read_caller_records
from triton_mme.observability.figures import ModelFigures, summarize
from triton_mme.observability.triton_log import read_events


def local_figures(log: Path, records: Path | None = None) -> tuple[list[ModelFigures], int]:
    """The rows, and how many malformed Triton lines the log had."""
    if not log.is_file():
        raise UserError(f"--local {log}: no Triton log there; start `triton-mme serve-local` (it writes one)")
    with log.open(encoding="utf-8", errors="replace") as lines:
        summary = summarize(read_events(lines))
    if records is not None:
        if not records.is_file():
            raise UserError(f"--records {records}: no such file; write it with --metrics-out")
        with records.open(encoding="utf-8") as lines:
            callers = read_caller_records(lines, where=str(records))
        for model, seen in callers.items():
            row = summary.models.setdefault(model, ModelFigures(model))
            row.p50_ms, row.p99_ms = seen.percentile(0.5), seen.percentile(0.99)
    return list(summary.models.values()), len(summary.malformed)

"""Read the callers' embedded-metric-format records (triton_mme.client.caller_metrics) back into per-model
latency percentiles, errors and cold starts, for `triton-mme models --local`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from triton_mme.core.bounded import load_json
from triton_mme.core.errors import UserError
from triton_mme.core.limits import MAX_REPLY_BYTES
from triton_mme.core.model_metrics import CALLER_COLD, CALLER_ERRORS, CALLER_LATENCY, MODEL_DIMENSION


class RecordsError(UserError, ValueError):
    """A records file that cannot be read; one line."""


@dataclass
class CallerFigures:
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    cold: int = 0

    def percentile(self, q: float) -> float | None:
        return float(np.quantile(self.latencies_ms, q)) if self.latencies_ms else None


def read_caller_records(lines: Iterable[str], *, where: str) -> dict[str, CallerFigures]:
    """Per TargetModel; lines that are not caller records (other JSON, blank) are skipped."""
    figures: dict[str, CallerFigures] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = load_json(line, where=f"{where}:{number}", max_bytes=MAX_REPLY_BYTES)
        except ValueError:
            raise RecordsError(
                f"{where}:{number}: not a JSON line (embedded metric format expected)"
            ) from None
        if not isinstance(record, dict) or MODEL_DIMENSION not in record or CALLER_LATENCY not in record:
            continue
        latencies = record[CALLER_LATENCY]
        if not isinstance(latencies, list) or not all(isinstance(v, int | float) for v in latencies):
            raise RecordsError(f"{where}:{number}: {CALLER_LATENCY} is not a list of milliseconds")
        mine = figures.setdefault(str(record[MODEL_DIMENSION]), CallerFigures())
        mine.latencies_ms += [float(v) for v in latencies]
        mine.errors += int(record.get(CALLER_ERRORS, 0))
        mine.cold += int(record.get(CALLER_COLD, 0))
    return figures

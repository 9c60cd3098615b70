"""The build's progress: one bar tick and one line per step (load, reference, export, optimise, verify,
package), each line with the step's wall time and the build process's peak resident memory during it.

A large model spends minutes in one step, so a bar that ticks once per archive says nothing for minutes and
its ETA averages archives of very different sizes; this bar names the step under way and shows elapsed time
only.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triton_mme.core.formats import Format

# Steps of one model, then of each of its formats, in the order the build runs them.
MODEL_STEPS = ("load", "reference")
ARCHIVE_STEPS = ("export", "optimise", "verify", "package")
BAR_FORMAT = "{desc} | {n_fmt}/{total_fmt} steps [{elapsed}]"
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_HIGH_WATER = re.compile(r"^VmHWM:\s+(\d+) kB$", re.MULTILINE)


def steps_for(formats: int) -> int:
    """Bar ticks of a model with this many archives to build."""
    return len(MODEL_STEPS) + formats * len(ARCHIVE_STEPS)


def peak_resident_bytes() -> int | None:
    """The kernel's high-water mark of this process's resident memory (Linux), None elsewhere."""
    try:
        found = _HIGH_WATER.search(_STATUS.read_text(encoding="ascii"))
    except OSError:
        return None
    return int(found.group(1)) * 1024 if found else None


def reset_peak_resident() -> bool:
    """Restart the high-water mark at the current resident size ("5" to clear_refs, Linux 4.0+)."""
    try:
        _CLEAR_REFS.write_text("5", encoding="ascii")
    except OSError:
        return False
    return True


def gib(size: int) -> str:
    return f"{size / 2**30:.2f} GiB"


@dataclass
class StepCost:
    """Wall time and the process's peak resident memory over some steps."""

    seconds: float = 0.0
    peak_bytes: int | None = None

    def add(self, other: StepCost) -> None:
        self.seconds += other.seconds
        if other.peak_bytes is not None:
            self.peak_bytes = max(self.peak_bytes or 0, other.peak_bytes)


@dataclass
class BuildProgress:
    """Progress of a whole build; `bar` is a tqdm bar (disabled bars still write their lines)."""

    bar: Any
    costs: dict[str, StepCost] = field(default_factory=dict)

    @contextmanager
    def step(self, model: str, what: str, fmt: Format | None = None) -> Iterator[None]:
        """Time one step and record its peak memory under the model (fmt None) or the archive."""
        where = model if fmt is None else f"{model}/{fmt.value}"
        self.bar.set_description_str(f"{where}: {what}", refresh=True)
        exact = reset_peak_resident()
        started = time.monotonic()
        try:
            yield
        finally:
            peak = peak_resident_bytes()
            cost = StepCost(time.monotonic() - started, peak)
            self.costs.setdefault(where, StepCost()).add(cost)
            memory = "" if peak is None else f", peak {gib(peak)}" + ("" if exact else " (process so far)")
            self.bar.write(f"{where}: {what} {cost.seconds:.1f} s{memory}", file=sys.stderr)
            self.bar.update(1)

    def skip(self, steps: int) -> None:
        """Count steps that will not run (a cached archive, a failed model's remaining steps)."""
        self.bar.update(steps)

    def archive_cost(self, model: str, fmt: Format, formats: int) -> StepCost:
        """An archive's own steps plus its share of the model's steps (load, reference), and the peak of
        either: the model's steps run once for all of its `formats` archives."""
        shared = self.costs.get(model, StepCost())
        own = self.costs.get(f"{model}/{fmt.value}", StepCost())
        total = StepCost(own.seconds + shared.seconds / max(formats, 1), own.peak_bytes)
        if shared.peak_bytes is not None:
            total.peak_bytes = max(total.peak_bytes or 0, shared.peak_bytes)
        return total

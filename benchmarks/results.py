"""What a benchmark run produces: figures with units, ratios between figures of the same run, targets.

A section owns its figures; a ratio or a target can only name figures of its own section, so every
comparison is computed from numbers measured in the same run, never typed in.
"""

from __future__ import annotations

import json
import math
import operator
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.timing import Samples

RAN = "ran"
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
}


@dataclass(frozen=True)
class Figure:
    """One measured value; `value` is the headline (p50 or median when samples were taken)."""

    key: str
    label: str
    value: float
    unit: str
    statistic: str = "value"
    count: int = 1
    p50: float | None = None
    p99: float | None = None
    mean: float | None = None
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class Ratio:
    key: str
    label: str
    numerator: str
    denominator: str
    value: float
    unit: str = "x"


@dataclass(frozen=True)
class Target:
    label: str
    measured_key: str
    measured: float
    comparison: str
    threshold: float
    unit: str
    passed: bool


@dataclass
class Section:
    """The results of one benchmark; `status` is "ran", or says why it did not ("not run: no GPU")."""

    name: str
    title: str
    status: str = RAN
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    ratios: list[Ratio] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    # Keys of same-unit figures worth a bar chart; the first figure's unit labels the axis.
    chart: list[str] = field(default_factory=list)
    # Curves instead of bars: per series label, (x, figure key) points, drawn on log-log axes relative to the
    # first point (so figures of different units share one chart, and a linear cost is a slope-1 line).
    curves: dict[str, list[tuple[float, str]]] = field(default_factory=dict)

    def add(self, key: str, label: str, value: float, unit: str) -> Figure:
        return self._append(Figure(key=key, label=label, value=float(value), unit=unit))

    def add_samples(self, key: str, label: str, samples: Samples, *, unit: str, scale: float = 1.0) -> Figure:
        """Latency-like samples (seconds) shown in `unit`: `scale` converts seconds to it (1000 for ms)."""
        stats = samples.scaled(scale)
        figure = Figure(
            key=key,
            label=label,
            value=stats.p50,
            unit=unit,
            statistic="p50",
            count=stats.count,
            p50=stats.p50,
            p99=stats.p99,
            mean=stats.mean,
            minimum=stats.minimum,
            maximum=stats.maximum,
        )
        return self._append(figure)

    def add_median(self, key: str, label: str, values: list[float], unit: str) -> Figure:
        """The median of repeated whole-run measurements (cold starts, synth runs), with its spread."""
        stats = Samples(values)
        figure = Figure(
            key=key,
            label=label,
            value=stats.p50,
            unit=unit,
            statistic="median",
            count=stats.count,
            p50=stats.p50,
            mean=stats.mean,
            minimum=stats.minimum,
            maximum=stats.maximum,
        )
        return self._append(figure)

    def figure(self, key: str) -> Figure:
        for candidate in self.figures:
            if candidate.key == key:
                return candidate
        raise KeyError(f"section '{self.name}' has no figure '{key}'")

    def ratio(self, key: str, label: str, numerator: str, denominator: str) -> Ratio:
        top, bottom = self.figure(numerator), self.figure(denominator)
        if top.unit != bottom.unit:
            raise ValueError(f"ratio '{key}': units differ ({top.unit} / {bottom.unit})")
        value = top.value / bottom.value if bottom.value else math.inf
        ratio = Ratio(key=key, label=label, numerator=numerator, denominator=denominator, value=value)
        self.ratios.append(ratio)
        return ratio

    def target(self, label: str, key: str, comparison: str, threshold: float) -> Target:
        """Check a ratio or figure of this section against a target from the issue (never adjusted)."""
        measured, unit = self._measured(key)
        passed = COMPARISONS[comparison](measured, threshold)
        target = Target(label, key, measured, comparison, threshold, unit, bool(passed))
        self.targets.append(target)
        return target

    def _measured(self, key: str) -> tuple[float, str]:
        for ratio in self.ratios:
            if ratio.key == key:
                return ratio.value, ratio.unit
        figure = self.figure(key)
        return figure.value, figure.unit

    def _append(self, figure: Figure) -> Figure:
        if any(existing.key == figure.key for existing in self.figures):
            raise ValueError(f"section '{self.name}': figure '{figure.key}' recorded twice")
        self.figures.append(figure)
        return figure


@dataclass
class Report:
    date: str
    machine: dict[str, Any]
    versions: dict[str, str]
    command: str
    quick: bool
    sections: list[Section] = field(default_factory=list)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def write_figures(figures: Any, out: Path | None, summary: str) -> None:
    """A standalone benchmark's figures as JSON to `out` (stdout without one), its table on stderr."""
    text = json.dumps(figures, indent=2) + "\n"
    if out:
        out.write_text(text)
    else:
        sys.stdout.write(text)
    print(summary, file=sys.stderr)

"""Per-model figures from Triton's log events and the callers' records, and the one-line-per-model table."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from triton_mme.observability.triton_log import Kind, LogEvent, Malformed

SECONDS_PER_DAY = 86400


@dataclass
class ModelFigures:
    """What one TargetModel did. None where no source gave the figure (e.g. latency nobody published)."""

    model: str
    requests: float | None = None
    cold_loads: float = 0
    evictions: float = 0
    failed_loads: float = 0
    failed_out_of_memory: float = 0
    last_load: str | None = None
    load_seconds: list[float] = field(default_factory=list)
    p50_ms: float | None = None
    p99_ms: float | None = None
    last_failure: str = ""


@dataclass
class LogSummary:
    models: dict[str, ModelFigures]
    malformed: list[str]


def summarize(events: Iterable[LogEvent | Malformed]) -> LogSummary:
    """Loads, unloads, failed loads (out of memory apart), invocations and load times per model."""
    models: dict[str, ModelFigures] = {}
    malformed: list[str] = []
    started: dict[str, LogEvent] = {}
    for event in events:
        if isinstance(event, Malformed):
            malformed.append(event.line)
            continue
        if event.kind is Kind.SHUTDOWN_UNLOADED:
            continue
        figures = models.get(event.model)
        if figures is None:
            figures = models[event.model] = ModelFigures(event.model)
        if event.kind is Kind.INVOKED:
            figures.requests = (figures.requests or 0) + 1
        elif event.kind is Kind.LOAD_STARTED:
            started[event.model] = event
        elif event.kind is Kind.LOADED:
            figures.cold_loads += 1
            figures.last_load = event.clock
            began = started.pop(event.model, None)
            if began is not None:
                took = event.seconds_of_day() - began.seconds_of_day()
                figures.load_seconds.append(took + SECONDS_PER_DAY if took < 0 else took)
        elif event.kind is Kind.LOAD_FAILED:
            started.pop(event.model, None)
            figures.failed_loads += 1
            figures.failed_out_of_memory += event.out_of_memory
            figures.last_failure = event.reason
        elif event.kind is Kind.UNLOADED:
            figures.evictions += 1
    return LogSummary(models, malformed)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


HEADER = (
    "TargetModel",
    "requests",
    "cold loads",
    "evictions",
    "failed loads",
    "last load",
    "load s",
    "p50 ms",
    "p99 ms",
)


def render_table(rows: Iterable[ModelFigures]) -> list[str]:
    """One line per model, busiest first; failed loads show how many were out of memory."""
    ordered = sorted(rows, key=lambda r: (-(r.requests or 0), -r.cold_loads, r.model))
    body = []
    for r in ordered:
        failed = _number(r.failed_loads) + (
            f" ({r.failed_out_of_memory:.0f} OOM)" if r.failed_out_of_memory else ""
        )
        mean_load = sum(r.load_seconds) / len(r.load_seconds) if r.load_seconds else None
        body.append(
            (
                r.model,
                _number(r.requests),
                _number(r.cold_loads),
                _number(r.evictions),
                failed,
                r.last_load or "-",
                "-" if mean_load is None else f"{mean_load:.1f}",
                _ms(r.p50_ms),
                _ms(r.p99_ms),
            )
        )
    widths = [max(len(row[i]) for row in [HEADER, *body]) for i in range(len(HEADER))]
    line = lambda row: "  ".join(  # noqa: E731
        cell.ljust(width) if i == 0 else cell.rjust(width)
        for i, (cell, width) in enumerate(zip(row, widths, strict=True))
    )
    return [line(HEADER), *(line(row) for row in body)]

"""Timing: warm-up then repeated perf_counter samples, and cold starts in a fresh process each time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Samples:
    """Repeated measurements of one thing, in one unit."""

    values: Sequence[float]

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("no samples were taken")

    @property
    def count(self) -> int:
        return len(self.values)

    @property
    def p50(self) -> float:
        return float(np.percentile(self.values, 50))

    @property
    def p99(self) -> float:
        return float(np.percentile(self.values, 99))

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def minimum(self) -> float:
        return float(min(self.values))

    @property
    def maximum(self) -> float:
        return float(max(self.values))

    @property
    def total(self) -> float:
        return float(sum(self.values))

    def scaled(self, factor: float) -> Samples:
        return Samples([value * factor for value in self.values])


def measure(call: Callable[[], object], *, warmup: int, repeat: int) -> Samples:
    """Seconds per call after `warmup` untimed calls."""
    for _ in range(warmup):
        call()
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return Samples(seconds)


def measure_side_by_side(
    calls: dict[str, Callable[[], object]], *, warmup: int, repeat: int, rounds: int = 4
) -> dict[str, Samples]:
    """Like `measure` for several contenders, in alternating rounds so that background load on a
    shared machine falls on every side alike."""
    for call in calls.values():
        for _ in range(warmup):
            call()
    seconds: dict[str, list[float]] = {name: [] for name in calls}
    per_round = [repeat // rounds + (1 if index < repeat % rounds else 0) for index in range(rounds)]
    for count in per_round:
        for name, call in calls.items():
            seconds[name].extend(measure(call, warmup=0, repeat=count).values if count else [])
    return {name: Samples(values) for name, values in seconds.items()}


def throughput(samples: Samples, items_per_call: int) -> float:
    """Items per second over all timed calls (total items / total seconds)."""
    return items_per_call * samples.count / samples.total


class ChildError(RuntimeError):
    """A measurement subprocess failed; the message carries its last line of output."""


def run_child(module: str, args: Sequence[str], *, timeout_s: float = 600.0) -> dict[str, float]:
    """Run `python -m module args` in a fresh interpreter; it prints one JSON object as its last line."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    completed = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        check=False,
    )
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        last = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        raise ChildError(f"{module} {' '.join(args)} failed (exit {completed.returncode}): {last}")
    result: dict[str, float] = json.loads(lines[-1])
    return result


def repeat_child(module: str, args: Sequence[str], *, repetitions: int) -> list[dict[str, float]]:
    """The same cold measurement `repetitions` times, each in its own new process."""
    return [run_child(module, args) for _ in range(repetitions)]

"""How a cost grows with the number of catalog entries: the slope of a log-log least-squares fit.

A cost c(N) ~ a·N^k has slope k on a log-log plot: about 0 is constant, about 1 linear, above 1 worse than
linear (2 is quadratic). Imports nothing of the project (pure arithmetic, tested on its own).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# Where one word ends and the next begins; a slope within 0.15 of 1 reads as linear (two decades of N and
# a noisy 2-core machine cannot tell 0.9 from 1.0).
CONSTANT_BELOW = 0.15
LINEAR_FROM = 0.85
WORSE_ABOVE = 1.15


def loglog_slope(sizes: Sequence[float], values: Sequence[float]) -> float:
    """The least-squares slope of log(value) against log(size); needs two or more distinct positive sizes."""
    if len(sizes) != len(values):
        raise ValueError(f"{len(sizes)} sizes but {len(values)} values")
    points = [(math.log(n), math.log(v)) for n, v in zip(sizes, values, strict=True) if n > 0 and v > 0]
    if len({x for x, _ in points}) < 2:
        raise ValueError("a slope needs values at two or more sizes, each above zero")
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def growth_word(slope: float) -> str:
    """The slope in words: constant, sublinear, linear or worse than linear."""
    if slope < CONSTANT_BELOW:
        return "constant"
    if slope < LINEAR_FROM:
        return "sublinear"
    if slope <= WORSE_ABOVE:
        return "linear"
    return "worse than linear"

"""The capacity chart reads at a glance: cost ticks in dollars, the hit-rate target inside the panel."""

from __future__ import annotations

import pytest

from triton_mme.planner.report import _hit_axis_start, _usd


@pytest.mark.parametrize(
    ("value", "text"), [(10_000, "$10k"), (100_000, "$100k"), (1_000_000, "$1M"), (2_500_000, "$2.5M")]
)
def test_cost_ticks_are_dollars_not_powers_of_ten(value: float, text: str) -> None:
    assert _usd(value) == text


@pytest.mark.parametrize(("hits", "target"), [([99.0, 99.5], 95.0), ([99.9], None), ([40.0, 80.0], 95.0)])
def test_the_hit_rate_target_and_every_bar_sit_inside_the_panel(
    hits: list[float], target: float | None
) -> None:
    start = _hit_axis_start(hits, target)
    shown = 100 - start
    lowest = min([*hits, *([target] if target is not None else [])])
    # The lowest mark (the target line in the default example) is a third of the span in, not on the edge.
    assert lowest - start >= shown / 3 - 1e-9 or start == 0
    assert start < lowest

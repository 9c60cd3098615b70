"""The timing helpers take the samples they promise; no timing figure is asserted."""

from __future__ import annotations

import pytest

from benchmarks.timing import ChildError, Samples, measure, measure_side_by_side, run_child, throughput


def test_measure_runs_warmup_then_the_timed_calls() -> None:
    calls: list[int] = []
    samples = measure(lambda: calls.append(1), warmup=3, repeat=5)
    assert len(calls) == 8
    assert samples.count == 5
    assert all(value >= 0 for value in samples.values)


def test_side_by_side_alternates_contenders_and_keeps_every_sample() -> None:
    order: list[str] = []
    samples = measure_side_by_side(
        {"a": lambda: order.append("a"), "b": lambda: order.append("b")}, warmup=1, repeat=6, rounds=3
    )
    assert {name: timed.count for name, timed in samples.items()} == {"a": 6, "b": 6}
    timed_order = order[2:]
    assert timed_order == ["a", "a", "b", "b"] * 3


def test_throughput_is_items_over_total_time() -> None:
    assert throughput(Samples([0.5, 1.5]), items_per_call=8) == pytest.approx(8.0)


def test_samples_need_at_least_one_value() -> None:
    with pytest.raises(ValueError, match="no samples"):
        Samples([])


def test_a_failing_child_is_reported_with_its_last_error_line() -> None:
    with pytest.raises(
        ChildError, match=r"failed \(exit 2\): .*error: the following arguments are required: archive"
    ):
        run_child("benchmarks.cold_start_child", [])

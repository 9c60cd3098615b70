"""Figures carry units; ratios and targets are computed from figures of the same section only."""

from __future__ import annotations

import pytest

from benchmarks.results import Section
from benchmarks.timing import Samples


def test_ratio_is_the_quotient_of_two_figures_of_the_section() -> None:
    section = Section(name="s", title="S")
    section.add("a", "A", 3.0, "s")
    section.add("b", "B", 12.0, "s")
    ratio = section.ratio("a_vs_b", "A / B", "a", "b")
    assert ratio.value == pytest.approx(0.25)
    assert (ratio.numerator, ratio.denominator, ratio.unit) == ("a", "b", "x")


def test_ratio_refuses_figures_in_different_units_or_missing() -> None:
    section = Section(name="s", title="S")
    section.add("a", "A", 1.0, "s")
    section.add("b", "B", 1.0, "ms")
    with pytest.raises(ValueError, match="units differ"):
        section.ratio("r", "R", "a", "b")
    with pytest.raises(KeyError, match="no figure 'c'"):
        section.ratio("r", "R", "a", "c")


def test_a_figure_key_is_recorded_once() -> None:
    section = Section(name="s", title="S")
    section.add("a", "A", 1.0, "s")
    with pytest.raises(ValueError, match="recorded twice"):
        section.add("a", "A again", 2.0, "s")


@pytest.mark.parametrize(
    ("comparison", "threshold", "passed"),
    [("<=", 0.7, True), ("<=", 0.5, False), (">=", 0.5, True), (">=", 0.7, False), ("==", 0.6, True)],
)
def test_targets_pass_or_miss_on_the_measured_ratio(comparison: str, threshold: float, passed: bool) -> None:
    section = Section(name="s", title="S")
    section.add("project", "Project", 0.6, "s")
    section.add("notebook", "Notebook", 1.0, "s")
    section.ratio("cold", "Cold", "project", "notebook")
    target = section.target("cold start", "cold", comparison, threshold)
    assert target.measured == pytest.approx(0.6)
    assert target.passed is passed
    assert target.unit == "x"


def test_a_target_may_name_a_figure_directly() -> None:
    section = Section(name="s", title="S")
    section.add("memory", "Memory per model", 0.25, "GB")
    target = section.target("memory per model", "memory", "<=", 0.19)
    assert (target.passed, target.unit) == (False, "GB")


def test_samples_become_a_figure_with_percentiles_count_and_unit() -> None:
    section = Section(name="s", title="S")
    seconds = Samples([0.001 * value for value in range(1, 101)])
    figure = section.add_samples("lat", "Latency", seconds, unit="ms", scale=1000)
    assert figure.unit == "ms"
    assert figure.count == 100
    assert figure.value == figure.p50 == pytest.approx(50.5)
    assert figure.p99 == pytest.approx(99.01)
    assert figure.mean == pytest.approx(50.5)


def test_median_of_whole_runs_keeps_the_spread() -> None:
    section = Section(name="s", title="S")
    figure = section.add_median("cold", "Cold", [3.0, 1.0, 2.0], "s")
    assert (figure.value, figure.minimum, figure.maximum, figure.count) == (2.0, 1.0, 3.0, 3)
    assert figure.statistic == "median"

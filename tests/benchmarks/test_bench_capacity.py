"""Benchmarks 11-13 in quick mode where they are quick: what each records and checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import hit_rate_validation, load_generator, plan_speed
from benchmarks.context import RunContext
from benchmarks.results import Section


def test_the_plan_benchmark_times_a_user_run_against_ten_seconds(tmp_path: Path) -> None:
    section = Section(plan_speed.NAME, plan_speed.TITLE)
    plan_speed.run(RunContext(quick=True, scratch=tmp_path), section)
    (target,) = section.targets
    assert target.threshold == 10.0 and target.comparison == "<=" and target.measured > 0
    assert section.settings["Archives"] == 1000 and section.settings["Instance types"] == 10
    assert section.notes[0].startswith("Recommendation: ml.")


@pytest.mark.slow
def test_the_load_generator_benchmark_measures_requests_per_second_per_user_count(tmp_path: Path) -> None:
    section = Section(load_generator.NAME, load_generator.TITLE)
    load_generator.run(RunContext(quick=True, scratch=tmp_path), section)
    rates = {users: section.figure(f"rate.{users}").value for users in load_generator.USERS}
    assert section.figure("rate").value == max(rates.values()) > 0
    assert [t.threshold for t in section.targets] == [300.0]


def test_the_validation_is_not_run_where_the_local_triton_cannot_be_isolated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from triton_mme.local_triton import isolation

    monkeypatch.setattr(isolation, "isolation_available", lambda: "user namespaces are disabled")
    assert hit_rate_validation.unavailable() == (
        "not run: the local Triton cannot be isolated here (user namespaces are disabled)"
    )

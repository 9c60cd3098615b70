"""Placement: per model and for the whole traffic, the multi-model endpoint against inference components
(all MME, hybrid, all dedicated), each sized by the plan's own simulation; the cheapest that meets the
targets is recommended."""

from __future__ import annotations

import math

import pytest
from planner_support import manifest_of

from triton_mme.core.platform import PLATFORM
from triton_mme.planner.candidates import sagemaker_candidates
from triton_mme.planner.inputs import service_seconds
from triton_mme.planner.options import PlanOptions
from triton_mme.planner.placement import (
    _tail_options,
    dedicated_copies,
    hottest_first,
    hybrid_sizes,
    placement_for,
)
from triton_mme.planner.plan import plan
from triton_mme.planner.prices import PriceBook
from triton_mme.planner.served import Served
from triton_mme.planner.traffic import parse_traffic, workload
from triton_mme.sizing.estimate import archive_estimates

GB = 10**9


def _served(
    count: int, *, size: int = GB, exponent: float = 1.2, rate: float = 20, service_ms: float = 8
) -> Served:
    traffic = parse_traffic(
        {"service_ms": service_ms, "zipf": {"total_rate_per_s": rate, "exponent": exponent}}
    )
    load = workload(traffic, manifest_of(count, size))
    return Served(load, archive_estimates(load.records, None), service_seconds(load, None, "traffic"))


def _plan(served: Served, **options: float) -> object:
    candidates, _ = sagemaker_candidates(PriceBook("us-east-1"), "25.04-py3", only=("ml.g4dn.xlarge",))
    return plan(served, candidates, PlanOptions(simulated_requests=20_000, **options))  # type: ignore[arg-type]


def test_hybrids_try_prefixes_about_one_and_a_half_times_apart() -> None:
    assert hybrid_sizes(1) == []
    assert hybrid_sizes(5) == [1, 2, 3, 4]
    assert hybrid_sizes(40) == [1, 2, 3, 4, 6, 9, 13, 19, 28]


def test_each_dedicated_archive_gets_the_copies_its_gpu_time_needs_and_at_least_one() -> None:
    served = _served(3, rate=100, service_ms=20)  # 2 GPU-seconds per second in all
    copies = dedicated_copies(served, PlanOptions(gpu_utilization_target=60))
    expected = [max(1, math.ceil(g / 0.6 - 1e-9)) for g in served.gpu_seconds_per_s]
    assert copies.tolist() == expected and copies[0] >= 2 and copies[-1] >= 1


def test_the_hit_rate_target_counts_all_requests() -> None:
    options = PlanOptions(min_cache_hit_rate=0.9)
    assert _tail_options(options, 0.5).min_cache_hit_rate == pytest.approx(0.8)  # 10 % of all = 20 % of half
    assert _tail_options(options, 0.05).min_cache_hit_rate is None  # every tail request may miss
    assert _tail_options(PlanOptions(), 0.5).min_cache_hit_rate is None


def test_a_capped_multi_model_endpoint_makes_the_hybrid_the_recommendation() -> None:
    served = _served(40)
    placed = placement_for(_plan(served, max_instances=1, min_cache_hit_rate=0.9))  # type: ignore[arg-type]
    assert placed is not None
    all_mme, hybrid, all_dedicated = placed.layouts
    assert not all_mme.feasible and all_mme.problem and "cache-hit rate" in all_mme.problem
    assert hybrid.feasible and hybrid.cold_start_rate is not None and hybrid.cold_start_rate <= 0.1
    assert placed.recommended is hybrid
    # The hottest archives go to inference components, and what is left stays on one MME instance.
    assert list(hybrid.dedicated) == hottest_first(served)[: len(hybrid.dedicated)]
    assert hybrid.mme_instances == 1 and 0 < len(hybrid.dedicated) < 40
    price = placed.candidate.price
    assert price is not None and hybrid.monthly_usd == pytest.approx(
        (hybrid.mme_instances + hybrid.copies) * price.usd_per_hour * PLATFORM.prices.hours_per_month.value
    )
    assert all_dedicated.cold_start_rate == 0 and all_dedicated.copies == 40
    assert all_dedicated.monthly_usd is not None and all_dedicated.monthly_usd > hybrid.monthly_usd
    assert placed.placed_dedicated() == hybrid.dedicated


def test_with_room_on_the_multi_model_endpoint_it_stays_the_cheapest() -> None:
    placed = placement_for(_plan(_served(40), min_cache_hit_rate=0.9))  # type: ignore[arg-type]
    assert placed is not None
    all_mme, hybrid, _ = placed.layouts
    assert placed.recommended is all_mme and all_mme.feasible
    assert all_mme.monthly_usd is not None and hybrid.monthly_usd is not None
    assert hybrid.monthly_usd > all_mme.monthly_usd
    # Per model: the all-MME cost split by GPU time, and each model's own copies.
    total = sum(m.mme_monthly_usd or 0 for m in placed.models)
    assert total == pytest.approx(all_mme.monthly_usd)
    assert all(m.copies >= 1 and m.dedicated_monthly_usd for m in placed.models)
    assert placed.placed_dedicated() == ()

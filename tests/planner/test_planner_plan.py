"""Sizing: instances for the GPU time and the targets, what binds, what one endpoint per model costs."""

from __future__ import annotations

import numpy as np
import pytest
from planner_support import manifest_of

from triton_mme.core.platform import PLATFORM
from triton_mme.planner.candidates import instance_limits, local_candidate, sagemaker_candidates
from triton_mme.planner.defaults import DEFAULT_MAX_INSTANCES
from triton_mme.planner.options import PlanOptions
from triton_mme.planner.plan import fewest, plan
from triton_mme.planner.prediction import predict
from triton_mme.planner.prices import PriceBook
from triton_mme.planner.served import Served
from triton_mme.planner.traffic import parse_traffic, workload
from triton_mme.sizing.estimate import archive_estimates
from triton_mme.sizing.targets import DEFAULT_GPU_UTILIZATION_TARGET
from triton_mme_cdk.settings import MAX_INSTANCES, Settings

SIMULATED = 20_000


def _served(
    count: int, rate: float, service_ms: float, exponent: float = 1.0, size: int | None = None
) -> Served:
    manifest = manifest_of(count) if size is None else manifest_of(count, size)
    traffic = parse_traffic(
        {"zipf": {"total_rate_per_s": rate, "exponent": exponent}, "service_ms": service_ms}
    )
    load = workload(traffic, manifest)
    return Served(load, archive_estimates(load.records, None), np.full(count, service_ms / 1000))


def _plan(served: Served, types: tuple[str, ...] = ("ml.g4dn.xlarge", "ml.g5.xlarge"), **options: object):
    candidates, _ = sagemaker_candidates(PriceBook("us-east-1"), "25.04-py3", only=types)
    return plan(served, candidates, PlanOptions(simulated_requests=SIMULATED, **options))  # type: ignore[arg-type]


def test_the_planner_defaults_are_the_endpoint_settings_defaults() -> None:
    assert Settings().scaling.gpu_utilization_target == DEFAULT_GPU_UTILIZATION_TARGET
    assert MAX_INSTANCES == DEFAULT_MAX_INSTANCES


def test_instances_cover_the_gpu_time_at_the_utilization_target() -> None:
    served = _served(10, rate=300, service_ms=10)  # 3 GPU-seconds per second
    sized = _plan(served, ("ml.g5.xlarge",)).candidates[0]
    assert sized.evaluation is not None and sized.feasible
    assert sized.evaluation.instances == 5  # 3 / 0.6
    assert sized.evaluation.utilization == pytest.approx(0.6)
    at_90 = _plan(served, ("ml.g5.xlarge",), gpu_utilization_target=90).candidates[0]
    assert at_90.evaluation is not None and at_90.evaluation.instances == 4


def test_a_hit_rate_target_adds_instances_until_the_pooled_cache_is_big_enough() -> None:
    served = _served(400, rate=5, service_ms=5)
    loose = _plan(served, ("ml.g4dn.xlarge",)).candidates[0]
    strict = _plan(served, ("ml.g4dn.xlarge",), min_cache_hit_rate=0.95).candidates[0]
    assert loose.evaluation is not None and strict.evaluation is not None
    assert loose.evaluation.instances == 1 and loose.evaluation.stats.hit_rate < 0.95
    assert strict.evaluation.stats.hit_rate >= 0.95 and strict.evaluation.instances > 1
    fewer = predict(
        served, strict.candidate, strict.evaluation.instances - 1, PlanOptions(simulated_requests=SIMULATED)
    )
    assert fewer.stats.hit_rate < 0.95  # the fewest that meet it
    assert strict.binding_limit == "GPU memory"
    assert strict.capacity_models["GPU memory"] == 43  # ResNet-50s on a T4


def test_cost_is_instances_times_the_hourly_price_and_one_endpoint_per_model_costs_one_each() -> None:
    served = _served(200, rate=2, service_ms=5)
    result = _plan(served, min_cache_hit_rate=0.9)
    for sized in result.candidates:
        assert sized.evaluation is not None and sized.candidate.price is not None
        hourly = sized.candidate.price.usd_per_hour
        assert sized.monthly_usd == pytest.approx(
            sized.evaluation.instances * hourly * PLATFORM.prices.hours_per_month.value
        )
        assert sized.single.instances == 200
        assert sized.single.monthly_usd == pytest.approx(200 * hourly * PLATFORM.prices.hours_per_month.value)
    best = result.cheapest()
    assert best is not None and best.monthly_usd == min(c.monthly_usd for c in result.candidates)  # type: ignore[type-var]
    text = result.recommendation()
    assert (
        text.startswith(f"{best.candidate.name} x ") and "one endpoint per model" in text and "saves" in text
    )


def test_the_p99_target_counts_the_cold_starts() -> None:
    served = _served(300, rate=5, service_ms=5)
    sized = _plan(served, ("ml.g4dn.xlarge",), p99_latency_ms=1000).candidates[0]
    assert sized.evaluation is not None
    # With more than 1 % of requests cold (4.4 s loads), no p99 under a second: the hit rate must pass 99 %.
    assert sized.evaluation.p99_s <= 1.0 and sized.evaluation.stats.hit_rate >= 0.99


def test_a_model_too_large_for_the_gpu_makes_the_type_unusable() -> None:
    served = _served(3, rate=1, service_ms=5, size=20_000_000_000)
    result = _plan(served)
    for sized in result.candidates:
        assert not sized.feasible and sized.evaluation is None
        assert sized.problem is not None and "GB of GPU memory" in sized.problem
        assert sized.single.problem is not None
    assert result.recommendation().startswith("no instance type meets the targets")


def test_types_whose_gpu_cannot_run_the_tag_are_left_out_with_the_reason() -> None:
    candidates, skipped = sagemaker_candidates(PriceBook("us-east-1"), "25.04-py3")
    assert {c.name for c in candidates} == {
        n for n in PLATFORM.gpu_instance_types if n.startswith(("ml.g4dn", "ml.g5"))
    }
    assert (
        dict(skipped)["ml.p3.2xlarge"]
        == "V100 (compute capability 7.0) cannot run sagemaker-tritonserver:25.04-py3"
    )
    older, skipped = sagemaker_candidates(PriceBook("us-east-1"), "24.09-py3")
    assert "ml.p3.2xlarge" in {c.name for c in older}


def test_an_instance_offers_its_gpu_less_tritons_share_and_its_host_less_the_reserve() -> None:
    limits = instance_limits(PLATFORM.gpu_instance_types["ml.g4dn.xlarge"])
    assert limits.gpu_bytes == 15360 * 2**20 - 300e6
    assert limits.host_bytes == 14 * 2**30
    assert limits.disk_bytes == 125e9
    assert (
        instance_limits(PLATFORM.gpu_instance_types["ml.p3.2xlarge"]).disk_bytes == 30e9
    )  # the assumed volume
    assert instance_limits(PLATFORM.gpu_instance_types["ml.g4dn.xlarge"], disk_gb=10).disk_bytes == 10e9


def test_the_local_triton_is_a_budget_of_models_and_never_downloads() -> None:
    served = _served(8, rate=10, service_ms=5, exponent=1.0)
    evaluation = predict(served, local_candidate(4), 1, PlanOptions(simulated_requests=SIMULATED))
    assert evaluation.stats.binding_limit == "model budget"
    assert evaluation.stats.resident_per_instance == 4
    outcome = evaluation.outcome()
    assert outcome.configuration.model_budget == 4 and outcome.kind == "predicted"
    assert outcome.cache_hit_rate == pytest.approx(0.66, abs=0.02)  # Che's approximation: 0.663
    assert [m.model for m in outcome.models] == [f"m{i:04d}/onnx" for i in range(8)]
    assert outcome.models[0].cache_hit_rate > outcome.models[-1].cache_hit_rate  # type: ignore[operator]
    # The local Triton reads archives from a directory: a miss costs the load only.
    assert evaluation.offsets_s.max() == pytest.approx(0.005 + served.estimates[0].load_s)


@pytest.mark.parametrize("guess", [1, 5, 37, 38, 60, 100, 500])
def test_the_search_finds_the_fewest_from_any_guess_and_asks_few_questions(guess: int) -> None:
    asked: list[int] = []

    def meets(n: int) -> bool:
        asked.append(n)
        return n >= 38

    assert fewest(1, 100, guess, meets) == 38
    assert len(set(asked)) <= 16
    assert fewest(1, 30, guess, meets) is None
    assert fewest(40, 100, guess, meets) == 40


def test_the_plan_says_what_set_the_instance_count() -> None:
    served = _served(10, rate=300, service_ms=10)
    assert _plan(served, ("ml.g5.xlarge",)).candidates[0].sized_by == "GPU time"
    at_least_seven = _plan(served, ("ml.g5.xlarge",), min_instances=7)
    assert at_least_seven.candidates[0].sized_by == "minimum (--min-instances)"
    strict = _plan(_served(400, rate=5, service_ms=5), ("ml.g4dn.xlarge",), min_cache_hit_rate=0.95)
    assert strict.candidates[0].sized_by is not None
    assert strict.candidates[0].sized_by.startswith("cache-hit rate ")
    assert strict.candidates[0].sized_by.endswith(" below 95.0%")

"""The cache simulation against what is known in closed form, and the platform's rules it encodes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from triton_mme.planner.eviction import (
    Footprint,
    Limits,
    che_hit_rate,
    draw_stream,
    replicas_needed,
    simulate,
    zipf_popularity,
)

REQUESTS = 100_000
WARMUP = 25_000


def _run(popularity: np.ndarray, limits: Limits, footprint: Footprint | None = None, **options: object):
    stream = draw_stream(popularity, WARMUP + REQUESTS, seed=11)
    return simulate(
        stream, footprint or Footprint.unit(len(popularity)), limits, warmup=WARMUP, seed=5, **options
    )


def test_uniform_popularity_over_n_models_with_room_for_k_hits_k_over_n() -> None:
    stats = _run(np.ones(50), Limits(models=10))
    assert stats.hit_rate == pytest.approx(10 / 50, abs=0.01)
    assert stats.resident_per_instance == 10
    assert stats.binding_limit == "model budget"


def test_with_room_for_every_model_every_request_after_the_warm_up_hits() -> None:
    stats = _run(zipf_popularity(40, 0.8), Limits(models=40))
    assert stats.hit_rate == 1.0
    assert stats.binding_limit is None
    assert stats.measured == REQUESTS


@pytest.mark.parametrize("exponent", [0.6, 0.8, 1.0, 1.2])
def test_zipf_hit_rate_matches_ches_approximation_within_one_point(exponent: float) -> None:
    popularity = zipf_popularity(1000, exponent)
    stats = _run(popularity, Limits(models=100))
    assert stats.hit_rate == pytest.approx(che_hit_rate(popularity, 100), abs=0.01)
    assert stats.hit_rate_stderr < 0.005


def test_ches_approximation_is_exact_where_the_closed_forms_are() -> None:
    popularity = zipf_popularity(20, 1.0)
    assert che_hit_rate(popularity, 20) == 1.0
    assert che_hit_rate(popularity, 0) == 0.0
    assert che_hit_rate(np.ones(10), 4) == pytest.approx(0.4)  # uniform: N (1 - exp(-T/N)) = C gives C/N


def test_bytes_behave_like_a_count_when_every_model_is_the_same_size() -> None:
    popularity = zipf_popularity(200, 1.0)
    size = 367e6
    footprint = Footprint(np.full(200, size), np.full(200, 1.0), np.full(200, 1.0))
    by_bytes = _run(popularity, Limits(gpu_bytes=30 * size + size / 2), footprint)
    by_count = _run(popularity, Limits(models=30))
    assert by_bytes.hit_rate == by_count.hit_rate
    assert by_bytes.binding_limit == "GPU memory"


def test_the_tightest_limit_is_the_one_that_unloads() -> None:
    footprint = Footprint(np.full(100, 1.0), np.full(100, 2.0), np.full(100, 1.0))
    stats = _run(zipf_popularity(100, 1.0), Limits(gpu_bytes=40, host_bytes=40), footprint)
    assert stats.binding_limit == "host memory"
    assert stats.resident_per_instance == 20


def test_instances_pool_their_caches_because_requests_follow_their_model() -> None:
    # Each loaded model lives on one instance and its requests go there, so 4 instances with room for 10
    # hold 40 distinct models: under uniform popularity, 40 % of requests hit (not 10 %).
    stats = _run(np.ones(100), Limits(models=10), instances=4)
    assert stats.hit_rate == pytest.approx(0.40, abs=0.01)
    assert stats.resident_per_instance == 10


def test_a_hot_model_gets_copies_on_different_instances() -> None:
    replicas = replicas_needed(np.array([2.0, *([0.01] * 9)]), 0.6, instances=3)
    assert replicas.tolist() == [3, *([1] * 9)]
    # Three copies, three instances with room for one model each: only if no two copies share an instance
    # do they all stay loaded.
    stats = _run(np.array([1.0]), Limits(models=1), instances=3, replicas=np.array([3]))
    assert stats.hit_rate == 1.0
    spread = _run(np.array([0.9, *([0.1 / 9] * 9)]), Limits(models=2), instances=3, replicas=replicas)
    single = _run(np.array([0.9, *([0.1 / 9] * 9)]), Limits(models=2), instances=3)
    assert spread.hits[0] / spread.requests[0] > 0.98
    assert single.hits[0] / single.requests[0] > spread.hits[0] / spread.requests[0]  # one copy is warmer


def test_an_unloaded_model_still_on_disk_loads_without_a_download() -> None:
    popularity = zipf_popularity(100, 0.8)
    roomy = _run(popularity, Limits(models=10, disk_bytes=1000), Footprint.unit(100))
    assert roomy.downloads.sum() == 0 and roomy.loads_from_disk.sum() > 0
    tight = _run(popularity, Limits(models=10, disk_bytes=10), Footprint.unit(100))
    assert tight.loads_from_disk.sum() == 0 and tight.downloads.sum() > 0
    assert roomy.hit_rate == tight.hit_rate  # the disk decides downloads, not hits


def test_limits_that_can_never_unload_are_dropped_so_instance_types_share_a_simulation() -> None:
    footprint = Footprint(np.full(50, 4.0), np.full(50, 2.0), np.full(50, 3.0))
    limits = Limits(gpu_bytes=40, host_bytes=30, disk_bytes=1000)
    effective = footprint.effective(limits)
    assert effective == Limits(gpu_bytes=40, host_bytes=math.inf, disk_bytes=math.inf)
    popularity = zipf_popularity(50, 1.0)
    assert _run(popularity, effective, footprint).hit_rate == _run(popularity, limits, footprint).hit_rate
    # Host memory that fills first stays.
    assert footprint.effective(Limits(gpu_bytes=40, host_bytes=10)).host_bytes == 10


def test_a_model_larger_than_an_empty_instance_is_named() -> None:
    footprint = Footprint(np.array([1.0, 50.0, 1.0]), np.ones(3), np.ones(3))
    assert footprint.too_large(Limits(gpu_bytes=40)) == [1]


def test_the_same_seed_gives_the_same_result() -> None:
    popularity = zipf_popularity(300, 0.9)
    first = _run(popularity, Limits(models=30), instances=3)
    second = _run(popularity, Limits(models=30), instances=3)
    assert first.hits.tolist() == second.hits.tolist()

"""The latency model: the M/M/1 wait in closed form, and the cold-start share of the tail."""

from __future__ import annotations

import math

import numpy as np
import pytest

from triton_mme.planner.latency import cold_mixture, mixture_quantile, per_component_quantile


def test_without_queueing_the_quantile_is_the_service_time() -> None:
    assert mixture_quantile(
        0.99, np.array([0.01]), np.array([1.0]), utilization=0.0, mean_service_s=0.01
    ) == (pytest.approx(0.01, abs=1e-6))


def test_the_mm1_wait_has_its_closed_form_quantile() -> None:
    # P(W > t) = rho exp(-(1 - rho) t / s) = 0.01 with rho 0.5, s 1: t = 2 ln 50.
    value = mixture_quantile(0.99, np.array([0.0]), np.array([1.0]), utilization=0.5, mean_service_s=1.0)
    assert value == pytest.approx(2 * math.log(50), rel=1e-6)


def test_a_full_instance_never_answers() -> None:
    assert (
        mixture_quantile(0.99, np.array([0.01]), np.array([1.0]), utilization=1.0, mean_service_s=0.01)
        == math.inf
    )


def test_two_percent_cold_requests_put_the_p99_at_the_cold_start_and_the_p50_at_the_hit() -> None:
    offsets, weights = cold_mixture(
        np.array([0.01]),
        np.array([4.4]),
        np.array([2.0]),
        hit=np.array([0.98]),
        from_disk=np.array([0.02]),
        download=np.array([0.0]),
    )
    p99 = mixture_quantile(0.99, offsets, weights, utilization=0.3, mean_service_s=0.01)
    p50 = mixture_quantile(0.5, offsets, weights, utilization=0.3, mean_service_s=0.01)
    assert 4.41 <= p99 < 4.5
    assert p50 == pytest.approx(0.01, abs=0.005)


def test_many_mixtures_at_once_agree_with_one_at_a_time() -> None:
    offsets = np.array([[0.01, 0.02], [1.0, 2.0], [3.0, 5.0]])
    weights = np.array([[0.9, 0.5], [0.05, 0.3], [0.05, 0.2]])
    together = per_component_quantile(0.99, offsets, weights, utilization=0.4, mean_service_s=0.015)
    for k in range(2):
        alone = mixture_quantile(0.99, offsets[:, k], weights[:, k], utilization=0.4, mean_service_s=0.015)
        assert together[k] == pytest.approx(alone, rel=1e-6)
    assert math.isnan(
        per_component_quantile(0.5, offsets, np.zeros((3, 2)), utilization=0.4, mean_service_s=0.01)[0]
    )

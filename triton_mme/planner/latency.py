"""Request latency on one instance: queueing for the GPU, the model's own time, and the cold start share.

A request's latency is its service time s_i, plus the wait W for the GPU, plus — on a cache miss — the load
(and, when the archive is no longer on the instance's disk, the download before it). The wait is that of an
M/M/1 queue at the instance's GPU utilization rho with mean service time s (Poisson arrivals, exponential
service): P(W > t) = rho * exp(-(1 - rho) t / s). Real GPU kernels vary less than exponentially, so this
overstates the wait: the safe side. The latency distribution is the mixture of these shifted waits over
models and their hit, load-from-disk and download shares; its quantiles are found by bisection.
"""

from __future__ import annotations

import math

import numpy as np


def wait_exceeds(t: np.ndarray, utilization: np.ndarray, mean_service_s: np.ndarray) -> np.ndarray:
    """P(W > t) for the M/M/1 wait, element-wise; 1 for t < 0."""
    decay = np.exp(-(1 - utilization) * np.maximum(t, 0) / np.maximum(mean_service_s, 1e-12))
    return np.where(t < 0, 1.0, utilization * decay)


def mixture_quantile(
    quantile: float,
    offsets_s: np.ndarray,
    weights: np.ndarray,
    *,
    utilization: float | np.ndarray,
    mean_service_s: float | np.ndarray,
) -> float:
    """The `quantile` of latency = offset_k + W_k with probability weights[k]; W_k waits at utilization
    and mean service time k (one figure for all components, or one each)."""
    offsets = np.asarray(offsets_s, dtype=float)
    weights = np.asarray(weights, dtype=float)
    rho = np.broadcast_to(np.asarray(utilization, dtype=float), offsets.shape)
    service = np.broadcast_to(np.asarray(mean_service_s, dtype=float), offsets.shape)
    keep = weights > 0
    if not keep.any():
        return math.nan
    weights, offsets, rho, service = (
        weights[keep] / weights[keep].sum(),
        offsets[keep],
        rho[keep],
        service[keep],
    )
    if (rho >= 1).any():
        return math.inf
    tail = 1 - quantile

    def exceeding(x: float) -> float:
        return float(np.sum(weights * wait_exceeds(x - offsets, rho, service)))

    low, high = 0.0, float(offsets.max()) + 1.0
    while exceeding(high) > tail:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        if exceeding(middle) > tail:
            low = middle
        else:
            high = middle
    return high


def cold_mixture(
    service_s: np.ndarray,
    load_s: np.ndarray,
    download_s: np.ndarray,
    *,
    hit: np.ndarray,
    from_disk: np.ndarray,
    download: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, weights) of the three outcomes of each model's requests: a hit, a load from disk, a
    download and load; `hit`, `from_disk` and `download` are shares of all requests."""
    offsets = np.concatenate([service_s, service_s + load_s, service_s + load_s + download_s])
    weights = np.concatenate([hit, from_disk, download])
    return offsets, weights


def per_component_quantile(
    quantile: float,
    offsets_s: np.ndarray,
    weights: np.ndarray,
    *,
    utilization: float,
    mean_service_s: float,
) -> np.ndarray:
    """`mixture_quantile` for many mixtures at once: column k of `offsets_s` and `weights` (shape
    outcomes x mixtures) is mixture k; NaN where a mixture has no weight."""
    offsets = np.asarray(offsets_s, dtype=float)
    totals = weights.sum(axis=0)
    shares = np.divide(weights, totals, out=np.zeros_like(weights, dtype=float), where=totals > 0)
    if utilization >= 1:
        return np.where(totals > 0, math.inf, math.nan)
    rho = np.full(offsets.shape, utilization)
    service = np.full(offsets.shape, mean_service_s)
    tail = 1 - quantile

    def exceeding(x: np.ndarray) -> np.ndarray:
        return np.sum(shares * wait_exceeds(x[None, :] - offsets, rho, service), axis=0)

    low = np.zeros(offsets.shape[1])
    high = offsets.max(axis=0) + 1.0
    while (exceeding(high) > tail).any():
        high = np.where(exceeding(high) > tail, high * 2, high)
    for _ in range(100):
        middle = (low + high) / 2
        above = exceeding(middle) > tail
        low, high = np.where(above, middle, low), np.where(above, high, middle)
    return np.where(totals > 0, high, math.nan)

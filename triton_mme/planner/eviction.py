"""The model cache of a SageMaker multi-model endpoint, simulated request by request.

What the platform documents (AWS, "How multi-model endpoints work"; "Set SageMaker AI multi-model endpoint
model caching behavior"; "Invoke a multi-model endpoint"), and how it is modelled here:

- Routing with model affinity. "SageMaker continues to route requests for a model to the instance where the
  model is already loaded": a request for a loaded model goes to the instance that holds it. Which instance
  receives a model loaded nowhere is not documented; here it is one picked uniformly at random (seeded).
- Hot models. "If the model receives many invocation requests, and there are additional instances, SageMaker
  routes some requests to another instance": a model whose GPU time exceeds what one instance gives at the
  utilization target gets `replicas` copies, its requests spread evenly over them, each copy homed as above
  (never two copies on one instance).
- Eviction. Loading a model into an instance whose memory is full unloads unused models first; the order is
  taken as least recently used, the order the platform's caching page implies ("cache frequently used
  models") and that users report. Limits: GPU memory, host memory and the storage volume (a loaded model's
  archive cannot be deleted), or, for the local Triton, a number of models.
- Disk. An unloaded model stays on the storage volume and loads later without a download; when the volume is
  full the least recently used unloaded archives are deleted. Memory evictions happen in least-recently-used
  order, so unloaded archives are deleted in the order they were unloaded.
- Loads are instantaneous in request order: a request arriving while its model loads counts as a hit. This
  matters only when a model's requests come closer together than its load time.

Traffic is a stream of independent requests, each for model i with probability p_i (the independent
reference model). The hit rate of an LRU cache under this model depends on the popularity only, not on the
request rate, so a sample stream of `requests` (after `warmup` requests that fill the caches) gives the hit
rate of a whole day's traffic; its standard error is estimated from batch means.

`che_hit_rate` is Che's approximation of the same LRU hit rate for equal-sized models in one cache; the
tests check the simulation against it and against the closed forms (uniform popularity over N models with
room for K: K/N; room for all: every request after warm-up hits).
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

import numpy as np

BATCHES = 10  # batch means for the standard error of the hit rate
LIMIT_NAMES = ("GPU memory", "host memory", "disk", "model budget")


@dataclass(frozen=True)
class Limits:
    """What one instance can hold; math.inf where a resource never runs out."""

    gpu_bytes: float = math.inf
    host_bytes: float = math.inf
    disk_bytes: float = math.inf
    models: float = math.inf  # the local Triton's model budget

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.gpu_bytes, self.host_bytes, self.disk_bytes, self.models)


@dataclass(frozen=True)
class Footprint:
    """Per model (same order as the popularity): what a loaded model occupies, and its archive on disk."""

    gpu_bytes: np.ndarray
    host_bytes: np.ndarray
    disk_bytes: np.ndarray

    @classmethod
    def unit(cls, count: int) -> Footprint:
        """Every model the same size (closed-form checks, a budget of models)."""
        ones = np.ones(count)
        return cls(ones, ones, ones)

    def per_model(self, index: int) -> tuple[float, float, float, float]:
        return (
            float(self.gpu_bytes[index]),
            float(self.host_bytes[index]),
            float(self.disk_bytes[index]),
            1.0,
        )

    def effective(self, limits: Limits) -> Limits:
        """The same limits with those that can never force an unload set to infinity, so that instance
        types differing only there share one simulation: a limit that holds every model at once, and a
        memory limit that fills no sooner than the GPU's for any set of models (every model takes no more
        of it, proportionally, than of the GPU). Disk also decides which idle archives are kept, so only
        the first rule applies to it."""
        gpu, host, disk, budget = limits.as_tuple()
        if self.gpu_bytes.sum() <= gpu:
            gpu = math.inf
        if self.host_bytes.sum() <= host or (
            math.isfinite(gpu) and bool(np.all(self.host_bytes * gpu <= self.gpu_bytes * host))
        ):
            host = math.inf
        if self.disk_bytes.sum() <= disk:
            disk = math.inf
        if len(self.gpu_bytes) <= budget:
            budget = math.inf
        return Limits(gpu, host, disk, budget)

    def too_large(self, limits: Limits) -> list[int]:
        """Models that cannot be loaded even into an empty instance."""
        sizes = np.stack([self.gpu_bytes, self.host_bytes, self.disk_bytes, np.ones_like(self.gpu_bytes)])
        caps = np.array(limits.as_tuple())[:, None]
        return [int(i) for i in np.flatnonzero((sizes > caps).any(axis=0))]


@dataclass
class CacheStats:
    """What the simulated endpoint saw over the measured requests (warm-up excluded), per model."""

    requests: np.ndarray
    hits: np.ndarray
    loads_from_disk: np.ndarray  # misses whose archive was still on the instance's disk
    downloads: np.ndarray  # misses that downloaded the archive first
    resident_per_instance: float  # loaded models per instance, averaged over the batch boundaries
    evictions: Counter[str] = field(default_factory=Counter)  # unloads by the limit that forced them
    batch_hit_rates: tuple[float, ...] = ()

    @property
    def measured(self) -> int:
        return int(self.requests.sum())

    @property
    def hit_rate(self) -> float:
        return float(self.hits.sum() / max(self.measured, 1))

    @property
    def hit_rate_stderr(self) -> float:
        rates = np.array(self.batch_hit_rates)
        return float(rates.std(ddof=1) / math.sqrt(len(rates))) if len(rates) > 1 else math.nan

    @property
    def binding_limit(self) -> str | None:
        """The limit that forced most unloads; None when nothing was ever unloaded."""
        return self.evictions.most_common(1)[0][0] if self.evictions else None

    def model_hit_rates(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.requests > 0, self.hits / np.maximum(self.requests, 1), np.nan)


def replicas_needed(gpu_seconds_per_s: np.ndarray, utilization: float, instances: int) -> np.ndarray:
    """Copies per model: enough that no copy needs more GPU time than an instance gives at `utilization`."""
    wanted = np.ceil(gpu_seconds_per_s / utilization - 1e-9).astype(np.int64)
    return np.clip(wanted, 1, instances)


def draw_stream(popularity: np.ndarray, length: int, seed: int) -> np.ndarray:
    """`length` independent requests, model i with probability popularity[i]."""
    rng = np.random.default_rng(seed)
    return rng.choice(len(popularity), size=length, p=popularity / popularity.sum())


def simulate(
    stream: np.ndarray,
    footprint: Footprint,
    limits: Limits,
    *,
    instances: int = 1,
    replicas: np.ndarray | None = None,
    warmup: int = 0,
    seed: int = 0,
) -> CacheStats:
    """Play `stream` (model indices) through `instances` LRU caches with affinity routing; the first
    `warmup` requests fill the caches and are not counted."""
    models = len(footprint.gpu_bytes)
    if instances < 1:
        raise ValueError(f"instances: {instances}; at least 1")
    copies = np.ones(models, dtype=np.int64) if replicas is None else np.clip(replicas, 1, instances)
    rng = np.random.default_rng(seed)
    # Which copy of its model each request goes to, and where a copy loaded nowhere would be loaded.
    copy_of = (rng.random(len(stream)) * copies[stream]).astype(np.int64)
    keys = (stream + models * copy_of).tolist()
    picks = rng.integers(0, instances, size=len(stream)).tolist()
    model_of = stream.tolist()

    sizes = [footprint.per_model(i) for i in range(models)]
    gpu_cap, host_cap, disk_cap, model_cap = limits.as_tuple()
    home = [-1] * (models * int(copies.max()))  # instance holding each (model, copy), or -1
    loaded: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(instances)]
    used = [[0.0, 0.0, 0.0, 0.0] for _ in range(instances)]  # GPU, host, disk of the loaded, count
    idle: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(instances)]  # unloaded, still on disk
    idle_disk = [0.0] * instances
    holders: dict[int, set[int]] = {}  # model -> instances holding one of its copies (models with copies)
    multi = (copies > 1).tolist()

    requests, hits, from_disk, downloads = ([0] * models for _ in range(4))
    unloads_by_limit = [0, 0, 0, 0]
    measured_total = max(len(keys) - warmup, 0)
    boundaries = (
        {warmup + (b + 1) * measured_total // BATCHES for b in range(BATCHES)} if measured_total else set()
    )
    batch_rates: list[float] = []
    resident: list[float] = []
    batch_hits = batch_requests = 0

    for t, key in enumerate(keys):
        counted = t >= warmup
        m = model_of[t]
        j = home[key]
        if j >= 0:  # loaded: the request goes where the model is
            loaded[j].move_to_end(key)
            if counted:
                requests[m] += 1
                hits[m] += 1
                batch_hits += 1
                batch_requests += 1
        else:  # loaded nowhere: load it on the picked instance, unloading the least recently used first
            j = picks[t]
            if multi[m]:  # never two copies of one model on one instance
                taken = holders.setdefault(m, set())
                while j in taken:
                    j = (j + 1) % instances
                taken.add(j)
            gpu, host, disk, _ = sizes[m]
            on_disk = m in idle[j]
            if on_disk:
                del idle[j][m]
                idle_disk[j] -= disk
            if counted:
                requests[m] += 1
                batch_requests += 1
                if on_disk:
                    from_disk[m] += 1
                else:
                    downloads[m] += 1
            use, cache = used[j], loaded[j]
            while cache:
                if use[0] + gpu > gpu_cap:
                    limit = 0
                elif use[1] + host > host_cap:
                    limit = 1
                elif use[2] + disk > disk_cap:
                    limit = 2
                elif use[3] + 1 > model_cap:
                    limit = 3
                else:
                    break
                old_key, _ = cache.popitem(last=False)
                old = old_key % models
                home[old_key] = -1
                if multi[old]:
                    holders[old].discard(j)
                old_gpu, old_host, old_disk, _ = sizes[old]
                use[0] -= old_gpu
                use[1] -= old_host
                use[2] -= old_disk
                use[3] -= 1
                idle[j][old] = None
                idle_disk[j] += old_disk
                if counted:
                    unloads_by_limit[limit] += 1
            use[0] += gpu
            use[1] += host
            use[2] += disk
            use[3] += 1
            cache[key] = None
            home[key] = j
            while idle[j] and use[2] + idle_disk[j] > disk_cap:  # the volume is full: delete idle archives
                gone, _ = idle[j].popitem(last=False)
                idle_disk[j] -= sizes[gone][2]
        if t + 1 in boundaries:
            batch_rates.append(batch_hits / max(batch_requests, 1))
            resident.append(sum(len(cache) for cache in loaded) / instances)
            batch_hits = batch_requests = 0

    evictions = Counter({LIMIT_NAMES[r]: n for r, n in enumerate(unloads_by_limit) if n})
    return CacheStats(
        requests=np.array(requests),
        hits=np.array(hits),
        loads_from_disk=np.array(from_disk),
        downloads=np.array(downloads),
        resident_per_instance=float(np.mean(resident)) if resident else 0.0,
        evictions=evictions,
        batch_hit_rates=tuple(batch_rates),
    )


def che_hit_rate(popularity: np.ndarray, capacity: float) -> float:
    """Che's approximation of the LRU hit rate of one cache of `capacity` equal-sized models: the
    characteristic time T solves sum(1 - exp(-p_i T)) = capacity; model i hits with 1 - exp(-p_i T)."""
    p = np.asarray(popularity, dtype=float)
    p = p[p > 0] / p.sum()
    if capacity >= len(p):
        return 1.0
    if capacity <= 0:
        return 0.0
    low, high = 0.0, 1.0
    while np.sum(1 - np.exp(-p * high)) < capacity:
        high *= 2
    for _ in range(60):
        middle = (low + high) / 2
        if np.sum(1 - np.exp(-p * middle)) < capacity:
            low = middle
        else:
            high = middle
    return float(np.sum(p * (1 - np.exp(-p * high))))


def zipf_popularity(count: int, exponent: float) -> np.ndarray:
    """Popularity of ranks 1..count under Zipf's law with `exponent` (0: uniform), summing to 1."""
    weights = 1.0 / np.arange(1, count + 1, dtype=float) ** exponent
    return weights / weights.sum()

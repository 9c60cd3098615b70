"""The requests a load test sends: one ready-made body per archive (random inputs shaped by the manifest,
Triton's binary encoding, as the client sends them) and each user's seeded choice of archive by popularity."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from triton_mme.client.payloads import EncodedRequest, check_request_size, encode_request
from triton_mme.core.manifest import ArchiveRecord
from triton_mme.core.samples import sample_inputs
from triton_mme.planner.traffic import Workload

CHOICES_PER_DRAW = 1024


@dataclass(frozen=True)
class RequestPlan:
    """What every user of a run shares: the archives, their popularity, their bodies."""

    records: tuple[ArchiveRecord, ...]
    labels: tuple[str, ...]
    popularity: np.ndarray
    bodies: tuple[EncodedRequest, ...]
    seed: int

    @property
    def target_models(self) -> tuple[str, ...]:
        return tuple(record.target_model for record in self.records)

    def choices(self, user: int) -> Iterator[int]:
        """An endless, seeded sequence of archive indices for one user, drawn by popularity."""
        rng = np.random.default_rng([self.seed, user])
        while True:
            yield from rng.choice(len(self.popularity), size=CHOICES_PER_DRAW, p=self.popularity).tolist()


def request_body(record: ArchiveRecord, *, binary: bool = True, seed: int = 0) -> EncodedRequest:
    """One batch-1 request for the archive, with every output asked for by name."""
    inputs = sample_inputs(record.inputs, 1, seed=seed)
    request = encode_request(inputs, [spec.name for spec in record.outputs], binary=binary)
    check_request_size(request)
    return request


def request_plan(load: Workload, *, binary: bool = True) -> RequestPlan:
    bodies = tuple(request_body(record, binary=binary, seed=i) for i, record in enumerate(load.records))
    return RequestPlan(load.records, load.labels, load.popularity, bodies, load.seed)

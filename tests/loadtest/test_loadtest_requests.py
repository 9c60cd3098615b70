"""The requests a load test sends: one body per archive as the client encodes it; choices by popularity."""

from __future__ import annotations

import json

import numpy as np
import pytest
from planner_support import manifest_of

from triton_mme.client.payloads import header_length
from triton_mme.loadtest.requests import request_plan
from triton_mme.planner.traffic import parse_traffic, workload


@pytest.fixture
def plan():  # type: ignore[no-untyped-def]
    traffic = parse_traffic({"zipf": {"total_rate_per_s": 10, "exponent": 1.2}, "seed": 9})
    return request_plan(workload(traffic, manifest_of(5)))


def test_each_archive_gets_a_binary_batch_of_one_shaped_by_its_manifest(plan) -> None:  # type: ignore[no-untyped-def]
    body = plan.bodies[0]
    length = header_length(body.content_type)
    assert length is not None
    header = json.loads(body.body[:length])
    assert header["inputs"] == [
        {"name": "input", "shape": [1, 3, 8, 8], "datatype": "FP32", "parameters": {"binary_data_size": 768}}
    ]
    assert header["outputs"] == [{"name": "output", "parameters": {"binary_data": True}}]
    assert len(body.body) == length + 768


def test_each_user_draws_its_own_seeded_sequence_by_popularity(plan) -> None:  # type: ignore[no-untyped-def]
    first = [next(c) for c in [plan.choices(0)] for _ in range(20000)]
    again = [next(c) for c in [plan.choices(0)] for _ in range(20)]
    other = [next(c) for c in [plan.choices(1)] for _ in range(20)]
    assert first[:20] == again and first[:20] != other
    shares = np.bincount(first, minlength=5) / len(first)
    assert shares == pytest.approx(plan.popularity, abs=0.01)

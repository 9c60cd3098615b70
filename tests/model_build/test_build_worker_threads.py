"""A build worker runs PyTorch on its share of the cores: workers x threads never exceeds the cores, where a
thread per core in every worker had OpenMP's waiting threads spin on the other workers' cores
(benchmarks/results/build-workers.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from triton_mme.catalog import parse_catalog
from triton_mme.model_build import pipeline


@pytest.fixture
def torch_threads() -> Iterator[int]:
    import torch

    before = torch.get_num_threads()
    yield before
    torch.set_num_threads(before)


def test_a_worker_sets_pytorchs_threads_to_what_it_is_given(tmp_path: Path, torch_threads: int) -> None:
    import torch

    catalog = parse_catalog(
        {
            "models": [
                {
                    "name": "tiny",
                    "source": "torchvision:squeezenet1_1",
                    "weights": "random",
                    "formats": ["onnx"],
                    "max_batch_size": 1,
                }
            ]
        }
    )
    nothing_pending = pipeline._Plan(catalog.models[0], keys={}, hits={})
    wanted = 1 if torch_threads > 1 else 2
    outcomes, failures = pipeline._build_in_worker(nothing_pending, tmp_path, "25.04-py3", None, wanted)
    assert (outcomes, failures) == ([], [])
    assert torch.get_num_threads() == wanted


@pytest.mark.parametrize(("cores", "workers", "threads"), [(2, 2, 1), (2, 3, 1), (16, 2, 8), (8, 3, 2)])
def test_workers_share_the_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, workers: int, threads: int
) -> None:
    monkeypatch.setattr(pipeline, "usable_cores", lambda: cores)
    assert pipeline.worker_threads(workers) == threads

"""The GPU section: skipped with a stated reason where no GPU exists, measured where one does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from benchmarks import gpu
from benchmarks.__main__ import main


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Tesla T4", (8.1, 65.0)),
        ("NVIDIA A10G", (31.2, 125.0)),
        ("NVIDIA A100-SXM4-80GB", (19.5, 312.0)),
        ("NVIDIA H200", (67.0, 989.0)),
        ("Some Future GPU", None),
    ],
)
def test_published_peak_is_found_by_gpu_model(name: str, expected: tuple[float, float] | None) -> None:
    assert gpu.published_peak(name) == expected


def test_without_cuda_the_section_says_why() -> None:
    if torch.cuda.is_available():
        assert gpu.unavailable() is None
    else:
        assert gpu.unavailable() == "not run: no GPU"


@pytest.mark.gpu
@pytest.mark.slow
def test_quick_gpu_section_measures_with_units(tmp_path: Path) -> None:
    assert main(["--quick", "--only", "gpu", "--out", str(tmp_path)]) == 0
    (section,) = json.loads(next(tmp_path.glob("*.json")).read_text())["sections"]
    assert section["status"] == "ran"
    keys = {figure["key"] for figure in section["figures"]}
    assert {"eager.b128", "torchscript.b128", "torchscript_fp16.b128", "memory.per_model"} <= keys
    assert all(figure["unit"] for figure in section["figures"])
    assert {target["measured_key"] for target in section["targets"]} >= {"torchscript_fp16_vs_eager.b128"}

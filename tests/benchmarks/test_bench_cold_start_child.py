"""A cold start in a fresh process: phases add up, the config's warm-up runs, settings follow config.pbtxt."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.onnx_load import load_model_dir, unpack, warmup_requests
from benchmarks.timing import run_child
from triton_mme.archive_inspection.archive import read_archive

PHASES = ("unpack", "session", "warmup", "first_inference")


@pytest.mark.parametrize("side", ["project", "notebook"])
def test_child_reports_every_phase_in_seconds(tiny_archives: dict[str, Path], side: str) -> None:
    result = run_child("benchmarks.cold_start_child", [str(tiny_archives[side])])
    assert set(result) == {*PHASES, "load_and_first", "total"}
    assert all(result[phase] >= 0 for phase in PHASES)
    assert result["total"] == pytest.approx(sum(result[phase] for phase in PHASES), rel=1e-6)
    assert result["load_and_first"] == pytest.approx(result["total"] - result["unpack"], rel=1e-6)


def test_project_config_warmup_becomes_requests_and_notebook_has_none(tiny_archives: dict[str, Path]) -> None:
    project = warmup_requests(read_archive(tiny_archives["project"]).config)
    assert len(project) == 1
    assert project[0]["x"].shape == (1, 4)
    assert project[0]["x"].dtype == np.float32
    assert warmup_requests(read_archive(tiny_archives["notebook"]).config) == []


def test_loaded_archive_runs_with_its_config_inputs(tiny_archives: dict[str, Path], tmp_path: Path) -> None:
    model = load_model_dir(unpack(tiny_archives["project"], tmp_path))
    feeds = model.feeds(3)
    (output,) = model.infer(feeds)
    np.testing.assert_allclose(output, np.maximum(feeds["x"] + 1.0, 0.0), rtol=1e-6)

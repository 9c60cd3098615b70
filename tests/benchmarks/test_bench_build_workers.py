"""The build-parallelism benchmark's parts: the plain notebook-style script packs a model Triton can load
(its ONNX answers like the checkpoint), and the table sets each way beside that script."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import numpy as np
import pytest

from benchmarks import plain_build
from benchmarks.build_workers import WAYS, _environment, table
from benchmarks.checkpoints import write_state_dicts


def test_the_plain_script_packs_one_model_directory_per_checkpoint(tmp_path: Path) -> None:
    import onnxruntime
    import torch
    import torchvision
    from safetensors.torch import load_file

    (checkpoint,) = write_state_dicts(tmp_path / "checkpoints", 1, classes=plain_build.CLASSES)
    assert plain_build.main(["--out", str(tmp_path / "out"), str(checkpoint)]) == 0
    with tarfile.open(tmp_path / "out" / "c0000.tar.gz") as archive:
        assert sorted(archive.getnames()) == ["c0000", "c0000/1", "c0000/1/model.onnx", "c0000/config.pbtxt"]
        archive.extractall(tmp_path / "unpacked", filter="data")
    config = (tmp_path / "unpacked" / "c0000" / "config.pbtxt").read_text()
    assert 'name: "c0000"' in config and "dims: [ 3, 32, 32 ]" in config and "dims: [ 10 ]" in config
    model = torchvision.models.get_model(plain_build.ARCHITECTURE, num_classes=plain_build.CLASSES)
    model.load_state_dict(load_file(checkpoint))
    session = onnxruntime.InferenceSession(str(tmp_path / "unpacked" / "c0000" / "1" / "model.onnx"))
    batch = np.random.default_rng(0).standard_normal((1, *plain_build.INPUT_SHAPE)).astype(np.float32)
    with torch.no_grad():
        expected = model.eval()(torch.from_numpy(batch)).numpy()
    (answer,) = session.run(["output"], {"input": batch})
    assert answer.shape == (1, plain_build.CLASSES)  # a batch of 1 against an export made at 2
    np.testing.assert_allclose(answer, expected, rtol=1e-4, atol=1e-5)


def test_the_table_sets_each_way_beside_the_plain_script() -> None:
    figures = {
        "build --workers 1": {"seconds": 40.0, "cpu_seconds": 50.0, "peak_mib": 900.0},
        "build --workers 2": {"seconds": 50.0, "cpu_seconds": 75.0, "peak_mib": 2_400.0},
        "plain script": {"seconds": 20.0, "cpu_seconds": 25.0, "peak_mib": 600.0},
        "build --workers 1, OMP_NUM_THREADS=1": {"seconds": 30.0, "cpu_seconds": 30.0, "peak_mib": 900.0},
        "build --workers 2, OMP_NUM_THREADS=1": {"seconds": 45.0, "cpu_seconds": 45.0, "peak_mib": 2_400.0},
        "plain script, OMP_NUM_THREADS=1": {"seconds": 15.0, "cpu_seconds": 15.0, "peak_mib": 600.0},
    }
    results = {
        "checkpoints": 20,
        "rounds": 2,
        "ways": {way: {"median": figures[way], "runs": [figures[way]] * 2} for way in WAYS},
    }
    rows = table(results).splitlines()
    assert rows[0].startswith("| 20 checkpoints, median of 2 |")
    assert rows[2] == "| build --workers 1 | 40.0 s | 50.0 s | 900 MiB | 2.00 | 2.00 |"
    assert rows[3] == "| build --workers 2 | 50.0 s | 75.0 s | 2,400 MiB | 2.50 | 3.00 |"
    assert rows[4] == "| plain script | 20.0 s | 25.0 s | 600 MiB | 1.00 | 1.00 |"
    # Beside the plain script with the same threads.
    assert rows[6] == "| build --workers 2, OMP_NUM_THREADS=1 | 45.0 s | 45.0 s | 2,400 MiB | 3.00 | 3.00 |"


@pytest.mark.parametrize("way", WAYS)
def test_every_way_builds_the_same_checkpoints(way: str, tmp_path: Path) -> None:
    from benchmarks.build_workers import _command

    checkpoints = [tmp_path / "c0000.safetensors", tmp_path / "c0001.safetensors"]
    command = _command(way, tmp_path / "models.yaml", checkpoints, tmp_path / "out")
    if way.startswith("plain script"):
        assert command[-2:] == [str(path) for path in checkpoints]
    else:
        assert command[command.index("--workers") + 1] == way.partition(",")[0][-1]
        assert command[command.index("--catalog") + 1] == str(tmp_path / "models.yaml")


def test_the_one_thread_ways_set_openmps_thread_count_and_the_others_leave_it() -> None:
    assert _environment("build --workers 2, OMP_NUM_THREADS=1")["OMP_NUM_THREADS"] == "1"
    assert _environment("build --workers 2").get("OMP_NUM_THREADS") == os.environ.get("OMP_NUM_THREADS")

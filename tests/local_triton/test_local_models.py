"""`triton-mme models --local` end to end: serve-local writes Triton's log, invoke publishes the caller's
record, and the per-model table reads both."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_local_cli import REPO_ROOT, _cli, _wait_until_ready
from tiny_archives import BuiltArchive

from triton_mme.local_triton.server import free_port

pytestmark = pytest.mark.timeout(300)


@pytest.mark.slow
def test_serve_local_invoke_and_the_per_model_table(
    built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path, isolated: None
) -> None:
    models_dir, archives = built
    cnn = archives["tiny-cnn/onnx"].record
    port, records = free_port(), tmp_path / "callers.jsonl"
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 64, 64), dtype=np.float32))
    # Its Triton's log goes into the folder it serves, where `models --local FOLDER` finds it.
    serve = ["serve-local", "--models", str(models_dir), "--port", str(port)]
    server = subprocess.Popen(
        [sys.executable, "-m", "triton_mme", *serve, "--scratch", str(tmp_path / "scratch")],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_until_ready(port, server)
        for _ in range(3):
            called = _cli(
                "invoke",
                "--local",
                f"http://127.0.0.1:{port}",
                "--target-model",
                cnn.target_model,
                "--manifest",
                str(models_dir / "manifest.json"),
                "--npy",
                f"{tmp_path / 'x.npy'}",
                "--metrics-out",
                str(records),
            )
            assert called.returncode == 0, called.stderr
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=60)
    written = [json.loads(line) for line in records.read_text().splitlines()]
    assert [r["ColdStarts"] for r in written] == [1, 0, 0], "the first call loaded the model"
    assert (models_dir / "local-triton.log").is_file()
    table = _cli("models", "--local", str(models_dir), "--records", str(records))
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split()[:3] == ["TargetModel", "requests", "cold"]
    (row,) = [r.split() for r in rows if r.startswith(cnn.target_model)]
    assert row[1:5] == ["3", "1", "0", "0"], table.stdout  # requests, cold loads, evictions, failed loads
    assert row[-2] != "-" and row[-1] != "-", "p50 and p99 from the caller's records"

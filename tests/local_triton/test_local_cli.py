"""`triton-mme serve-local` and `standin`: Ctrl-C leaves nothing running, one-line errors, stand-in report."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_archives import BuiltArchive, processes_mentioning

from triton_mme.local_triton.server import LOOPBACK, free_port

pytestmark = pytest.mark.timeout(240)
REPO_ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "triton_mme", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _request(port: int, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=60)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _wait_until_ready(port: int, process: subprocess.Popen[str], timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        try:
            if _request(port, "GET", "/ping")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    pytest.fail(f"the local endpoint on port {port} was not ready after {timeout_s} s")


def test_ctrl_c_stops_the_server_and_every_stub(
    built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path, isolated: None
) -> None:
    models_dir, archives = built
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "triton_mme",
            "serve-local",
            "--models",
            str(models_dir),
            "--port",
            str(port),
            "--scratch",
            str(tmp_path),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_until_ready(port, process)
        onnx = archives["tiny-roberta/onnx"]
        tensors = [
            {"name": name, "shape": list(v.shape), "datatype": "INT64", "data": v.ravel().tolist()}
            for name, v in onnx.sample(1).items()
        ]
        body = json.dumps({"inputs": tensors}).encode()
        status, reply = _request(port, "POST", f"/models/{onnx.target_model}/invoke", body)
        assert status == 200, reply
        assert {o["name"] for o in json.loads(reply)["outputs"]} == {"last_hidden_state", "pooler_output"}
        assert any("triton_python_backend_stub" in p for p in processes_mentioning(str(tmp_path)))
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, output
    assert "Triton runs in a private network namespace" in output
    assert f"{onnx.target_model}: instance_group[0].kind: KIND_GPU -> KIND_CPU" in output
    assert "Traceback" not in output
    assert processes_mentioning(str(tmp_path)) == []
    assert os.listdir(tmp_path) == []


def test_a_missing_build_directory_is_one_line_and_no_traceback(tmp_path: Path) -> None:
    result = _cli("serve-local", "--models", str(tmp_path / "absent"))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: --models: {tmp_path / 'absent'} is not a directory; build archives with `make build-models`"
    )


def test_a_zero_model_budget_is_refused() -> None:
    result = _cli("serve-local", "--model-budget", "0")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "error: triton-mme serve-local: argument --model-budget: '0' is not allowed; a whole number of at "
        "least 1 (see triton-mme serve-local --help)"
    )


def test_standin_prints_each_change(built: tuple[Path, dict[str, BuiltArchive]]) -> None:
    models_dir, archives = built
    target = archives["tiny-cnn/torchscript"].target_model
    result = _cli("standin", str(models_dir / target))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"{target}: platform 'pytorch_libtorch' -> backend 'python' "
        "(runs the archive's own model.pt with TorchScript on CPU)"
    )
    assert f"{target}: 1/model.py: added (the stand-in that runs 1/model.pt)" in lines


def test_standin_reports_a_tensorrt_archive_as_not_runnable_on_cpu(
    built: tuple[Path, dict[str, BuiltArchive]],
) -> None:
    models_dir, archives = built
    result = _cli("standin", str(models_dir / archives["tiny-cnn/tensorrt"].target_model))
    assert result.returncode == 1
    assert "not runnable in the local CPU Triton" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1

"""docs/catalog.md's first hour with own checkpoints, run as written: 40 state dicts with a labels file and a
text classifier with id2label are locked, built, served locally and asked; the answers are one row per input
with the team's class names. Only the port and the served scratch folder are replaced."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from client_support import write_image

from tests.test_round_trip import _ready
from triton_mme.local_triton.server import free_port

pytestmark = pytest.mark.timeout(900)
REPO_ROOT = Path(__file__).resolve().parents[1]
PAGE = REPO_ROOT / "docs" / "catalog.md"


def block(mark: str) -> str:
    return (
        PAGE.read_text(encoding="utf-8")
        .split(f"<!-- {mark} -->\n", 1)[1]
        .split("```bash\n", 1)[1]
        .split("```")[0]
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / ".venv").symlink_to(REPO_ROOT / ".venv")
    return tmp_path


@pytest.fixture
def servers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for server in started:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGINT)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)


@pytest.mark.slow
def test_the_first_hour_runs_as_written_and_answers_in_class_names(
    work: Path, servers: list[subprocess.Popen[str]], isolated: None
) -> None:
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    setup = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block("first-hour")],
        cwd=work, env=environment, capture_output=True, text=True, timeout=800, check=False,
    )  # fmt: skip
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert "team/models.lock.yaml: 41 checkpoints pinned" in setup.stdout
    assert "team/models.lock.yaml: up to date (41 checkpoints)" in setup.stdout
    assert not list((work / "team/build/.sources").iterdir())  # the build's copies do not stay
    port = free_port()
    serve, *invokes = [shlex.split(line) for line in block("first-hour-serve").splitlines() if line.strip()]
    assert serve[:2] == [".venv/bin/triton-mme", "serve-local"]
    server = subprocess.Popen(
        [*serve, "--port", str(port), "--scratch", str(work / "scratch")], cwd=work, env=environment,
        text=True, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    servers.append(server)
    _ready(port, server)
    for name in ("part-1.jpg", "part-2.jpg"):
        write_image(work / name)
    answers = []
    for command in invokes:
        argv = [word.replace("127.0.0.1:8080", f"127.0.0.1:{port}") for word in command]
        done = subprocess.run(
            [sys.executable, "-m", "triton_mme", *argv[1:]],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        answers.append(done.stdout)
    image, text, found = answers
    assert "part-1.jpg:\n  1. " in image and "part-2.jpg:\n  1. " in image
    ranked = [line.split()[2] for line in image.splitlines() if line.startswith("  1. ")]
    assert len(ranked) == 2 and set(ranked) <= {"scratch", "dent", "crack", "stain", "ok"}
    assert "'where is my refund':\n  1. " in text and "'the app crashes on start':\n  1. " in text
    rows = [line for line in text.splitlines() if line.startswith("  ")]
    assert len(rows) == 6  # three classes for each of the two texts, each named by id2label
    assert all(any(name in row for name in ("billing", "refund", "bug report")) for row in rows)
    assert "logits: shape" not in text
    assert found.count("\n  ") == 2 and "part-2.jpg:" in found  # its manifest found through the endpoint

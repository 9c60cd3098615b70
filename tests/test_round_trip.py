"""The README's offline round trip, run line by line as written, on a small catalog: build, serve-local,
invoke an image and a text model, serving-check, plan, loadtest, plan --compare.

The README block is the test's script: its commands are read from README.md and only the catalog (the
default one is 16 GB to build), the model names, the port, the picture and the load test's length are
replaced, so a documented command that stops working fails here.
"""

from __future__ import annotations

import http.client
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from build_support import tiny_cnn, tiny_roberta
from client_support import write_image

from triton_mme.local_triton.server import LOOPBACK, free_port

pytestmark = pytest.mark.timeout(900)
REPO_ROOT = Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"
MARK = "<!-- round-trip -->"
# The default catalog's names, as the README uses them, and the small catalog's.
RENAMED = {"resnet50": "tiny-cnn", "roberta-large": "tiny-roberta"}
LOAD_TEST_SECONDS = "4"


def round_trip_commands() -> list[list[str]]:
    """The README's round-trip block, one argument list per command, comments dropped."""
    block = README.read_text(encoding="utf-8").split(MARK, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


class RoundTrip:
    """Runs the README's commands in a fresh work directory (the build lands in its build/models)."""

    def __init__(self, work: Path, catalog: Path, port: int, picture: Path) -> None:
        self.work, self.catalog, self.port, self.picture = work, catalog, port, picture
        self.build_dir = work / "build" / "models"

    def argv(self, command: list[str]) -> list[str]:
        words = [self._word(word) for word in command]
        if words[0] == "make":
            target = words[1]
            settings = [f"BUILD_DIR={self.build_dir}"]
            if target == "build-models":
                settings.append(f"CATALOG={self.catalog}")
            if target == "serve-local":
                settings.append(f"SERVE_ARGS=--port {self.port} --scratch {self.work / 'scratch'}")
            return ["make", "--no-print-directory", "-C", str(REPO_ROOT), target, *settings]
        assert words[0] == ".venv/bin/triton-mme", command
        if "--duration" in words:
            words[words.index("--duration") + 1] = LOAD_TEST_SECONDS
        return [sys.executable, "-m", "triton_mme", *words[1:]]

    def _word(self, word: str) -> str:
        word = word.replace("127.0.0.1:8080", f"127.0.0.1:{self.port}")
        if word.startswith("docs/"):
            return str(REPO_ROOT / word)
        return str(self.picture) if word == "cat.jpg" else RENAMED.get(word, word)

    def run(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(command), cwd=self.work, capture_output=True, text=True, timeout=600, check=False
        )


def _ready(port: int, server: subprocess.Popen[str], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert server.poll() is None, server.communicate()
        try:
            connection = http.client.HTTPConnection(LOOPBACK, port, timeout=5)
            connection.request("GET", "/ping")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"serve-local was not ready on port {port} after {timeout_s} s")


@pytest.fixture
def trip(tmp_path: Path) -> RoundTrip:
    catalog = tmp_path / "catalog.yaml"
    entries = [tiny_cnn(formats=["onnx"]), tiny_roberta(formats=["onnx"])]
    catalog.write_text(yaml.safe_dump({"models": entries}), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    return RoundTrip(work, catalog, free_port(), write_image(tmp_path / "cat.jpg"))


@pytest.fixture
def serving(trip: RoundTrip) -> Iterator[list[subprocess.Popen[str]]]:
    """Where serve-local runs; Ctrl-C (SIGINT to its process group) stops it at the end."""
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
def test_the_readmes_offline_round_trip_works_as_written(
    trip: RoundTrip, serving: list[subprocess.Popen[str]], isolated: None
) -> None:
    commands = round_trip_commands()
    assert [c[:2] for c in commands[:2]] == [["make", "build-models"], ["make", "serve-local"]]
    outputs: dict[str, subprocess.CompletedProcess[str]] = {}
    for index, command in enumerate(commands):
        if command[:2] == ["make", "serve-local"]:
            server = subprocess.Popen(
                trip.argv(command), cwd=trip.work, text=True, start_new_session=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            )  # fmt: skip
            serving.append(server)
            _ready(trip.port, server)
            continue
        done = trip.run(command)
        assert done.returncode == 0, f"{shlex.join(command)}\n{done.stdout}\n{done.stderr}"
        outputs[f"{index}:{' '.join(command[:3])}"] = done
    build, image, text, check, plan, loadtest, compare = outputs.values()

    assert "2 archives in " in build.stdout
    assert (
        "  1. " in image.stdout and "warning: model 'tiny-cnn' was built with random weights" in image.stderr
    )
    # The offline build recorded a tokenizer: the text model answers a sentence.
    assert "last_hidden_state: shape [1, 16, 32]" in text.stdout
    assert "its tokenizer is the offline stand-in" in text.stderr
    # The serving check names each archive's phases as it goes, then each result.
    assert "  1/2 tiny-cnn-onnx-" in check.stdout and ": loading it in Triton" in check.stdout
    assert check.stdout.count("passed  ") == 2 and (trip.build_dir / "serving-report.json").is_file()
    assert "Recommendation: " in plan.stdout
    assert "Stack: none read" in plan.stdout  # the work directory is no project checkout
    assert "serving-report.json" not in plan.stderr  # the CPU report is not announced on every plan
    # The load test's live line, then the comparison that says what its figures are.
    # "1 request in 0 s" as well: the line comes at the first tick, which may follow the first request only.
    assert re.search(r"\d+ requests? in \d+ s", loadtest.stderr) or "warming up" in loadtest.stderr
    assert "Results: loadtest.json" in loadtest.stderr
    assert (
        "(CPU stand-in)" in compare.stdout
        and "note: measured on the local Triton's CPU stand-in" in compare.stdout
    )

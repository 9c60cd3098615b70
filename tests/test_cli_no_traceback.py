"""Every sub-command ends a fixable problem with one `error:` line and status 1, never a traceback: each is
run (in this process, so an uncaught exception fails the test) against a catalog whose family folder is
misspelt (`checkpoint/` for `checkpoints/`) where it reads a catalog, and against another bad input where it
does not. A new sub-command must be added here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_cli_hygiene import _sub_commands
from triton_mme.cli import main

TYPO = "typo.yaml"
MISSING = "missing.tar.gz"
# Bad input per sub-command; each fails on its arguments or files, before any AWS call, GPU or server.
BAD_RUNS: dict[str, list[list[str]]] = {
    "build": [["--catalog", TYPO]],
    "lock": [["--catalog", TYPO], ["--catalog", TYPO, "--check"]],
    "fetch-cache": [["--catalog", TYPO, "--bucket", "b"]],
    "verify": [[MISSING]],
    "gpu-check": [["--nonsense"]],
    "serving-check": [["--server", "nowhere"]],
    "cuda-check": [["--nonsense"]],
    "upload": [["--bucket", "b", "--source", "missing-folder"]],
    "stage-candidate": [["--fingerprint", "f"]],
    "fetch-candidate": [["--fingerprint", "f"], ["--fingerprint", "f", "--run", "r", "--shard", "-1"]],
    "publish-report": [["--nonsense"]],
    "publish-build": [
        ["--fingerprint", "f"],
        ["--fingerprint", "f", "--run", "r", "--shards", "2", "--bucket", "b"],
    ],
    "publish-cache": [["--nonsense"]],
    "list": [["--nonsense"]],
    "add": [[MISSING]],
    "remove": [["x"]],
    "invoke": [
        ["--model", "x", "--image", "a.jpg", "--manifest", "missing.json", "--local", "http://127.0.0.1:9"]
    ],
    "serve-local": [["--models", "missing-folder"]],
    "standin": [[MISSING]],
    "measure-local": [["--models", "missing-folder"]],
    "acceptance": [["--metrics-wait-s", "-1"]],
    "loadtest": [["--traffic", "missing.yaml", "--out", "out.json", "--local", "http://127.0.0.1:9"]],
    "models": [["--local", "not a url"]],
    "plan": [["--traffic", "missing.yaml"], ["--traffic", "traffic.yaml", "--write-placement", TYPO]],
}
# Commands that monkey-patch the interpreter (locust's gevent) run in a process of their own.
OWN_PROCESS = {"loadtest"}


@pytest.fixture
def bad_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "checkpoints" / "vision").mkdir(parents=True)
    typo = {
        "family": "vision",
        "source": "checkpoint:checkpoint/vision/{variant}.safetensors",
        "architecture": "torchvision:squeezenet1_1",
        "variants": "listed",
        "formats": ["onnx"],
        "max_batch_size": 4,
    }
    (tmp_path / TYPO).write_text(yaml.safe_dump({"models": [typo]}))
    (tmp_path / "traffic.yaml").write_text(yaml.safe_dump({"zipf": {"total_rps": 10, "models": 3}}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    return tmp_path


def test_every_sub_command_is_listed_here() -> None:
    assert sorted(BAD_RUNS) == sorted(_sub_commands())


@pytest.mark.parametrize(
    "argv",
    [[name, *args] for name, runs in BAD_RUNS.items() for args in runs],
    ids=lambda argv: " ".join(argv),
)
def test_a_bad_input_is_one_error_line(
    argv: list[str], bad_inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if argv[0] in OWN_PROCESS:
        run = subprocess.run([sys.executable, "-m", "triton_mme", *argv], capture_output=True, text=True)
        status, out, err = run.returncode, run.stdout, run.stderr
    else:
        status = main(argv)
        captured = capsys.readouterr()
        out, err = captured.out, captured.err
    assert status == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in out + err


def test_the_family_folder_typo_names_the_folder_it_meant(
    bad_inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lock", "--catalog", TYPO]) == 1
    err = capsys.readouterr().err
    assert "family 'vision'" in err and "checkpoint/ is not in" in err
    assert "did you mean checkpoints?" in err


# --- 9. defaults and names in --help ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "option", "shown"),
    [
        ("loadtest", "--warmup", "default: 0.0"),
        ("loadtest", "--warmup-requests", "default: 0"),
        ("loadtest", "--requests", "default: none"),
        ("invoke", "--format", "default: the only one"),
        ("invoke", "--top-k", "default: 5"),
    ],
)
def test_help_shows_the_default(command: str, option: str, shown: str) -> None:
    sub = _sub_commands()[command]
    (action,) = (a for a in sub._actions if option in a.option_strings)
    assert shown in sub._get_formatter()._expand_help(action)


def test_bench_help_names_every_benchmark_of_the_suite(capsys: pytest.CaptureFixture[str]) -> None:
    """The suite is not a sub-command (`python -m benchmarks`); its --help names what --only takes."""
    from benchmarks.__main__ import parse_args
    from benchmarks.options import BENCHMARK_NAMES
    from benchmarks.suite import BENCHMARKS

    assert tuple(b.name for b in BENCHMARKS) == BENCHMARK_NAMES
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "cold_start, resnet50" in shown and "(default: all)" in shown

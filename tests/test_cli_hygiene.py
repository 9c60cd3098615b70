"""The command line's own manners: one-line argparse errors with status 1, --version, defaults in --help."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from triton_mme.cli import main, parser

REPO_ROOT = Path(__file__).resolve().parents[1]


def _sub_commands() -> dict[str, argparse.ArgumentParser]:
    root = parser()
    (commands,) = (a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    return dict(commands.choices)


def test_an_argparse_refusal_is_one_error_line_with_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["invoke", "--model", "resnet50"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "error: triton-mme invoke: one of the arguments --image --text --npy is required "
        "(see triton-mme invoke --help)"
    ]
    assert main(["nonsense"]) == 1
    assert capsys.readouterr().err.startswith(
        "error: triton-mme: argument COMMAND: invalid choice: 'nonsense'"
    )


def test_version_prints_the_installed_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "triton_mme", "--version"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0
    assert result.stdout.strip() == "triton-mme 0.1.0"


def test_every_option_with_a_default_shows_it_in_help() -> None:
    missing = []
    for name, sub in _sub_commands().items():
        formatter = sub._get_formatter()
        for action in sub._actions:
            quiet = action.default is None or action.default is False or action.default == []
            if quiet or action.default is argparse.SUPPRESS or not action.option_strings:
                continue
            text = formatter._expand_help(action) if action.help else ""
            if "default" not in text.lower():
                missing.append(f"{name} {action.option_strings[0]}")
    assert missing == []


def test_serving_check_takes_no_warm_up() -> None:
    args = parser().parse_args(["serving-check", "--server", "local", "--warmup", "0"])
    assert args.warmup == 0

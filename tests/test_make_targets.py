"""Make targets a first user runs: `make diff` without credentials names the offline route in one line;
`make build-models` takes ONLY and CATALOG."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _make(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def test_make_diff_without_credentials_is_one_line_naming_the_offline_route(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env |= {
        "HOME": str(tmp_path),
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    done = _make("--silent", "diff", env=env)
    assert done.returncode != 0
    # make's own "make: ***" line (or "make[1]: ***" when the tests run under `make test`) follows ours.
    ours = [line for line in done.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert ours == [
        "error: make diff compares with the deployed stack and needs AWS credentials (none found); offline, "
        "compare with a saved template: make diff DIFF_TEMPLATE=path/to/saved.template.json (docs/deploy.md)"
    ]
    assert "Unknown option" not in done.stdout + done.stderr


def test_the_diff_commands_take_no_all_option() -> None:
    with_template = _make("-n", "diff", "DIFF_TEMPLATE=saved.json").stdout
    assert "cdk --no-notices diff TritonMultiModelEndpoint --template saved.json" in with_template
    assert "--all" not in with_template and "--all" not in _make("-n", "diff").stdout


def test_build_models_takes_one_model_and_another_catalog() -> None:
    command = _make("-n", "build-models", "ONLY=resnet50", "CATALOG=tiny.yaml").stdout
    assert "build --catalog tiny.yaml --out build/models --only resnet50 --weights random" in command


def test_bench_runs_the_suite_from_the_checkout() -> None:
    command = _make("-n", "bench", "BENCH_ARGS=--quick").stdout
    assert ".venv/bin/python -m benchmarks --quick" in command
    assert "triton-mme bench" not in command

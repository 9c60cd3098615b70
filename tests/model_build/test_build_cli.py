"""`triton-mme build|verify`: exit status and one-line messages; --help documents every option."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from build_support import tiny_cnn

from triton_mme import cli
from triton_mme.core.manifest import Manifest
from triton_mme.core.platform import PLATFORM
from triton_mme.core.runner_environment import TRITON_TAG_ENV


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).parents[2]
    command = [sys.executable, "-m", "triton_mme", *args]
    environment = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        command, capture_output=True, text=True, cwd=cwd or root, check=False, env=environment
    )


def _catalog(tmp_path: Path, *entries: dict) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": list(entries)}), encoding="utf-8")
    return path


def test_help_documents_every_command_and_option() -> None:
    top = _run("--help")
    assert top.returncode == 0
    for command in ("build", "verify", "upload"):
        assert command in top.stdout
    build = _run("build", "--help").stdout
    for option in (
        "--catalog",
        "--out",
        "--only",
        "--weights",
        "--skip-format",
        "--triton-tag",
        "--no-progress",
    ):
        assert option in build


@pytest.mark.slow
def test_build_then_verify_through_the_command_line(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, tiny_cnn(formats=["onnx"], input_shape=[3, 32, 32]))
    out = tmp_path / "out"
    built = _run("build", "--catalog", str(catalog), "--out", str(out), "--skip-format", "tensorrt")
    assert built.returncode == 0, built.stderr
    (record,) = Manifest.read(out / "manifest.json").archives
    assert f"tiny-cnn/onnx: {record.target_model}" in built.stderr  # one line per finished archive
    verified = _run("verify", str(out / record.target_model))
    assert verified.returncode == 0
    assert verified.stdout.startswith(f"{record.target_model}: OK (layout, archive policy, ")
    for check in (
        "config.pbtxt round trip",
        "onnx operators in standard domains",
        "onnxruntime run at batch 1",
    ):
        assert check in verified.stdout
    again = _run("build", "--catalog", str(catalog), "--out", str(out), "--no-progress")
    assert again.returncode == 0 and "tiny-cnn/onnx" in again.stderr and ", cached)" in again.stderr


@pytest.mark.parametrize(
    ("entry", "extra", "message"),
    [
        (tiny_cnn(max_batch_size=0), [], "error: "),
        (tiny_cnn(), ["--only", "nope"], "error: no model named 'nope' in the catalog; known: tiny-cnn"),
        (tiny_cnn(formats=["tensorrt"]), [], "error: format tensorrt needs a CUDA GPU"),
    ],
)
def test_failures_exit_non_zero_with_one_line(
    tmp_path: Path, entry: dict, extra: list[str], message: str
) -> None:
    result = _run(
        "build", "--catalog", str(_catalog(tmp_path, entry)), "--out", str(tmp_path / "out"), *extra
    )
    assert result.returncode == 1
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_missing_catalog_and_bad_archive(tmp_path: Path) -> None:
    missing = _run("build", "--catalog", str(tmp_path / "absent.yaml"), "--out", str(tmp_path / "out"))
    assert missing.returncode == 1 and "cannot read the model catalog" in missing.stderr
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"junk")
    bad = _run("verify", str(junk))
    assert bad.returncode == 1 and bad.stderr.startswith("error: junk.tar.gz: not a readable .tar.gz archive")


def test_triton_tag_defaults_to_the_platform_default_and_the_environment_overrides_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def build_defaults() -> argparse.Namespace:
        return cli.parser().parse_args(["build"])

    monkeypatch.delenv(TRITON_TAG_ENV, raising=False)
    assert build_defaults().triton_tag == PLATFORM.images.default_tag.value
    monkeypatch.setenv(TRITON_TAG_ENV, "24.09-py3")
    assert build_defaults().triton_tag == "24.09-py3"


def test_a_shard_of_the_catalog_builds_only_its_models_and_bad_shards_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from triton_mme.catalog import load_catalog
    from triton_mme.catalog.shards import read_shard, shards_json
    from triton_mme.cli import main as cli_main

    shards = tmp_path / "shards.json"
    shards.write_text(shards_json([["roberta-large"], ["resnet50"]]))
    assert read_shard(shards, 1) == ["resnet50"]
    assert load_catalog("models.yaml").subset(read_shard(shards, 0)).models[0].name == "roberta-large"
    for arguments, expected in (
        (["--shard", "2", "--shard-file", str(shards)], "shard 2: "),
        (["--shard", "0"], "--shard and --shard-file go together"),
    ):
        assert cli_main(["build", "--out", str(tmp_path / "out"), *arguments]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and expected in err and "\n" not in err
    shards.write_text(shards_json([["resnet50"], ["nobody"]]))
    assert (
        cli_main(["build", "--out", str(tmp_path / "out"), "--shard", "1", "--shard-file", str(shards)]) == 1
    )
    assert "no model named 'nobody' in the catalog" in capsys.readouterr().err

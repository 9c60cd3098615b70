"""Hostile or careless input to the store: one line each, and nothing written to the bucket."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hostile_archives import write_bomb, write_layout
from store_support import BUCKET, one_line_error

from triton_mme.cli import main
from triton_mme.core.files import file_sha256
from triton_mme.core.manifest import MANIFEST_FILE_NAME, Manifest


def _bucket_keys(s3: Any) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def _named_by_content(path: Path, name: str = "m", fmt: str = "onnx") -> Path:
    """Rename an archive as the build would: <name>-<format>-<its own sha256>.tar.gz."""
    return path.rename(path.with_name(f"{name}-{fmt}-{file_sha256(path)[:16]}.tar.gz"))


def _add(archive: Path, *arguments: str) -> int:
    return main(["add", str(archive), "--bucket", BUCKET, "--name", "m", *arguments])


@pytest.mark.parametrize(
    "file_name",
    [
        "My Model (final) v2\u202e.tar.gz",
        "model.tar.gz",
        "resnet50-onnx-0123456789abcdef.tar.gz.tar.gz",
        "Resnet50-onnx-0123456789abcdef.tar.gz",
        "resnet50-savedmodel-0123456789abcdef.tar.gz",
    ],
)
def test_add_refuses_a_file_name_outside_the_archive_naming_rule(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str], file_name: str
) -> None:
    out, manifest = built
    renamed = tmp_path / file_name
    shutil.copy(out / manifest.find("tiny-cnn", "onnx").target_model, renamed)

    assert _add(renamed) == 1
    error = one_line_error(capsys)
    assert error.startswith("error: ARCHIVE (its file name becomes the TargetModel): ")
    assert (
        "is not an archive name; allowed <model name>-<onnx|torchscript|tensorrt>-<16 lowercase hex " in error
    )
    assert "\u202e" not in error
    assert _bucket_keys(s3) == []


def test_add_refuses_an_archive_whose_name_says_another_format(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, manifest = built
    onnx = out / manifest.find("tiny-cnn", "onnx").target_model
    disguised = _named_by_content(Path(shutil.copy(onnx, tmp_path / "x")), "tiny-cnn", "torchscript")

    assert _add(disguised) == 1
    assert "the name says torchscript but the archive holds a onnx model" in one_line_error(capsys)
    assert _bucket_keys(s3) == []


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            'platform: "onnxruntime_onnx"\nmax_batch_size: 999999999\n',
            "config.pbtxt: max_batch_size 999999999 is not allowed; allowed 0..1024",
        ),
        (
            'platform: "onnxruntime_onnx"\nmax_batch_size: 1\n'
            'input { name: "x" data_type: TYPE_FP32 dims: [3, 100000, 100000] }\n',
            "config.pbtxt: input 'x' dims [3, 100000, 100000]: 30,000,000,000 elements per sample; "
            "allowed at most 134,217,728",
        ),
        (
            'platform: "onnxruntime_onnx"\nmax_batch_size: 1024\n'
            'output { name: "y" data_type: TYPE_FP32 dims: [512, 1024] }\n',
            "config.pbtxt: output 'y' dims [512, 1024]: 536,870,912 elements at max_batch_size 1024; "
            "allowed at most 268,435,456 (lower max_batch_size or the shape)",
        ),
        (
            'platform: "onnxruntime_onnx"\ninput { name: "x" data_type: TYPE_FP32 dims: [3, 0] }\n',
            "config.pbtxt: input 'x' dims [3, 0]: dimension 0 is not allowed; allowed 1..1,048,576 "
            "(or -1 where dynamic)",
        ),
    ],
)
def test_add_refuses_shapes_no_server_could_allocate(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str, message: str
) -> None:
    archive = _named_by_content(write_layout(tmp_path / "a.tar.gz", config=config))

    assert _add(archive) == 1
    assert one_line_error(capsys) == f"error: {archive.name}: {message}"
    assert _bucket_keys(s3) == []


def test_add_refuses_an_archive_past_the_unpacked_size_limit(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = _named_by_content(write_bomb(tmp_path / "a.tar.gz", model_bytes=8 * 1024 * 1024))
    assert archive.stat().st_size < 64 * 1024

    assert _add(archive, "--max-unpacked-mib", "4") == 1
    assert one_line_error(capsys) == (
        f"error: {archive.name}: unpacks to more than 4,194,304 bytes ('m-onnx/1/model.onnx' alone is "
        "8,388,608); allowed at most 4,194,304 (--max-unpacked-mib)"
    )
    assert _bucket_keys(s3) == []


def _hostile_build(directory: Path, record_changes: dict[str, Any], built: tuple[Path, Manifest]) -> None:
    """A build directory whose manifest was edited by hand after the build."""
    out, manifest = built
    shutil.copytree(out, directory)
    document = json.loads(manifest.to_json())
    document["archives"][0].update(record_changes)
    (directory / MANIFEST_FILE_NAME).write_text(json.dumps(document), encoding="utf-8")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"target_model": "../secret.txt"},
            "archives[0].target_model: not an archive name; allowed <model name>-<onnx|torchscript|tensorrt>-"
            "<16 lowercase hex digits>.tar.gz (got '../secret.txt')",
        ),
        (
            {"files": {"labels": "../../.aws/credentials"}},
            "archives[0].files: labels: '../../.aws/credentials' is not a labels file name",
        ),
        ({"name": "a/b"}, "archives[0].name: not a model name; allowed lowercase letters"),
    ],
)
def test_upload_refuses_a_manifest_naming_keys_outside_the_rules(
    s3: Any,
    built: tuple[Path, Manifest],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    changes: dict[str, Any],
    message: str,
) -> None:
    (tmp_path / "secret.txt").write_text("not for the bucket")
    _hostile_build(tmp_path / "build", changes, built)

    assert main(["upload", "--from", str(tmp_path / "build"), "--bucket", BUCKET]) == 1
    error = one_line_error(capsys)
    assert error.startswith(f"error: {tmp_path / 'build' / MANIFEST_FILE_NAME}: not a valid build manifest (")
    assert message in error
    assert _bucket_keys(s3) == []


@pytest.mark.parametrize("target", ["../manifests/manifest.json", "models/../x.tar.gz", "x.tar.gz\n"])
def test_remove_refuses_a_key_outside_the_naming_rule(
    s3: Any, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    s3.put_object(Bucket=BUCKET, Key="manifests/manifest.json", Body=b"{}")

    assert main(["remove", target, "--bucket", BUCKET]) == 1
    assert "is not an archive name" in one_line_error(capsys)
    assert _bucket_keys(s3) == ["manifests/manifest.json"]

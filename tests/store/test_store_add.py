"""`add` and a real build through `triton-mme upload`/`list`, on moto with real archives."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from store_support import BUCKET, one_line_error

from triton_mme.cli import main as model_build_main
from triton_mme.core.files import file_sha256
from triton_mme.core.manifest import Manifest
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import read_published_manifest


def _model_keys(s3: Any) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="models/").get("Contents", [])]


def test_a_real_build_uploads_and_lists_through_the_model_build_command(
    s3: Any, built: tuple[Path, Manifest], capsys: pytest.CaptureFixture[str]
) -> None:
    out, manifest = built

    assert model_build_main(["upload", "--from", str(out), "--bucket", BUCKET]) == 0
    assert sorted(_model_keys(s3)) == sorted(f"models/{t}" for t in manifest.target_models)
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) == manifest
    capsys.readouterr()

    assert model_build_main(["list", "--bucket", BUCKET]) == 0
    listed = capsys.readouterr().out
    for record in manifest.archives:
        assert f"{record.name}  " in listed and record.target_model in listed
    assert "(not in manifest)" not in listed


def test_add_verifies_publishes_and_records_the_archive(
    s3: Any, built: tuple[Path, Manifest], capsys: pytest.CaptureFixture[str]
) -> None:
    out, manifest = built
    original = manifest.find("tiny-cnn", "onnx")

    status = model_build_main(
        [
            "add",
            str(out / original.target_model),
            "--bucket",
            BUCKET,
            "--name",
            "vision",
            "--source",
            "team-b",
        ]
    )

    assert status == 0
    printed = capsys.readouterr().out
    assert "onnxruntime run at batch 4" in printed
    assert _model_keys(s3) == [f"models/{original.target_model}"]
    published = read_published_manifest(ModelStoreClient(s3, BUCKET))
    assert published is not None
    record = published.find("vision")
    # Everything a client needs comes from the archive's own config, as the build recorded it.
    assert (record.format, record.target_model, record.sha256, record.size_bytes) == (
        "onnx",
        original.target_model,
        original.sha256,
        original.size_bytes,
    )
    assert (record.inputs, record.outputs, record.max_batch_size) == (
        original.inputs,
        original.outputs,
        original.max_batch_size,
    )
    assert record.source == "team-b"


def test_add_replaces_the_entry_for_the_same_name_and_format(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, manifest = built
    onnx, torchscript = manifest.find("tiny-cnn", "onnx"), manifest.find("tiny-cnn", "torchscript")
    text = manifest.find("tiny-roberta", "onnx")
    for record in (onnx, text, torchscript):
        assert (
            model_build_main(["add", str(out / record.target_model), "--bucket", BUCKET, "--name", "m"]) == 0
        )
    published = read_published_manifest(ModelStoreClient(s3, BUCKET))
    assert published is not None
    # tiny-roberta's onnx replaced tiny-cnn's onnx under the name "m"; torchscript sits beside it.
    assert {(r.format, r.target_model) for r in published.archives} == {
        ("onnx", text.target_model),
        ("torchscript", torchscript.target_model),
    }
    capsys.readouterr()
    assert model_build_main(["list", "--bucket", BUCKET]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "(not in manifest)" in rows[onnx.target_model]
    assert rows[text.target_model].split()[-2:] == ["m", "onnx"]


def test_add_refuses_a_broken_archive_and_uploads_nothing(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.pbtxt"
    config.write_text('platform: "onnxruntime_onnx"\nmax_batch_size: 1\n', encoding="utf-8")
    broken = tmp_path / "incomplete.tar.gz"
    with tarfile.open(broken, "w:gz") as tar:
        tar.add(config, arcname="m/config.pbtxt")
    broken = broken.rename(tmp_path / f"m-onnx-{file_sha256(broken)[:16]}.tar.gz")

    assert model_build_main(["add", str(broken), "--bucket", BUCKET, "--name", "m"]) == 1
    assert f"{broken.name}: found ['m/config.pbtxt']; expected exactly" in one_line_error(capsys)
    assert _model_keys(s3) == []
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None


def test_add_refuses_a_renamed_archive_whose_name_claims_another_hash(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, manifest = built
    record = manifest.find("tiny-cnn", "onnx")
    renamed = tmp_path / "tiny-cnn-onnx-0000000000000000.tar.gz"
    shutil.copy(out / record.target_model, renamed)

    assert model_build_main(["add", str(renamed), "--bucket", BUCKET]) == 1
    assert "claims content hash 0000000000000000" in one_line_error(capsys)
    assert _model_keys(s3) == []


def test_add_never_overwrites_a_key_with_different_bytes(
    s3: Any, built: tuple[Path, Manifest], capsys: pytest.CaptureFixture[str]
) -> None:
    out, manifest = built
    record = manifest.find("tiny-cnn", "torchscript")
    s3.put_object(Bucket=BUCKET, Key=f"models/{record.target_model}", Body=b"someone else's model")

    assert model_build_main(["add", str(out / record.target_model), "--bucket", BUCKET, "--name", "m"]) == 1
    assert "already exists with different content" in one_line_error(capsys)
    body = s3.get_object(Bucket=BUCKET, Key=f"models/{record.target_model}")["Body"].read()
    assert body == b"someone else's model"
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--name", "Not_Valid"], "--name: 'Not_Valid' is not a model name; allowed lowercase letters"),
        (["--name", "resnet50\n"], "--name: 'resnet50\\n' is not a model name; allowed lowercase letters"),
        (["--prefix", "models/", "--manifest-prefix", "models/"], "overlaps --prefix"),
    ],
)
def test_add_argument_errors_are_one_line(
    s3: Any,
    built: tuple[Path, Manifest],
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    message: str,
) -> None:
    out, manifest = built
    archive = out / manifest.find("tiny-cnn", "onnx").target_model
    assert model_build_main(["add", str(archive), "--bucket", BUCKET, *arguments]) == 1
    assert message in one_line_error(capsys)
    assert _model_keys(s3) == []

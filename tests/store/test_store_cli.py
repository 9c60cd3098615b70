"""The store commands end to end on moto: upload, list, remove (exit status, one-line errors)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from store_support import ARCHIVES, BUCKET, one_line_error, write_build

from triton_mme.cli import main
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import read_published_manifest

pytestmark = pytest.mark.usefixtures("fake_archives")


def test_upload_command_publishes_and_reports(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_build(tmp_path, ARCHIVES)

    assert main(["upload", "--from", str(tmp_path), "--bucket", BUCKET]) == 0
    out = capsys.readouterr().out
    assert "uploaded s3://model-store/models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz" in out
    assert out.strip().splitlines()[-1] == "manifest s3://model-store/manifests/manifest.json"

    assert main(["upload", "--from", str(tmp_path), "--bucket", BUCKET]) == 0
    assert "skipped  s3://model-store/models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz" in capsys.readouterr().out


def test_upload_command_refuses_a_conflicting_key_in_one_line(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_build(tmp_path, ARCHIVES)
    s3.put_object(Bucket=BUCKET, Key="models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz", Body=b"other")

    assert main(["upload", "--from", str(tmp_path), "--bucket", BUCKET]) == 1
    assert (
        "models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz already exists with different content"
        in one_line_error(capsys)
    )
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None


def test_s3_errors_are_one_line(s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_build(tmp_path, ARCHIVES)
    assert main(["upload", "--from", str(tmp_path), "--bucket", "no-such-bucket"]) == 1
    assert "no-such-bucket" in one_line_error(capsys)


def test_list_marks_archives_outside_the_manifest(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_build(tmp_path, ARCHIVES)
    main(["upload", "--from", str(tmp_path), "--bucket", BUCKET])
    s3.put_object(Bucket=BUCKET, Key="models/stray-onnx-0000000000000000.tar.gz", Body=b"x" * 2048)
    capsys.readouterr()

    assert main(["list", "--bucket", BUCKET]) == 0
    lines = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:-1]}
    assert lines["resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz"][-2:] == ["resnet", "onnx"]
    assert lines["resnet-torchscript-bbbbbbbbbbbbbbbb.tar.gz"][-2:] == ["resnet", "torchscript"]
    assert lines["resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz"][1:3] == ["18", "B"]
    assert lines["stray-onnx-0000000000000000.tar.gz"][1:] == ["2.0", "KiB", "(not", "in", "manifest)", "-"]


def test_list_reports_manifest_entries_whose_archive_is_missing(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_build(tmp_path, ARCHIVES)
    main(["upload", "--from", str(tmp_path), "--bucket", BUCKET])
    s3.delete_object(
        Bucket=BUCKET, Key="models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz"
    )  # behind the tool's back
    capsys.readouterr()

    assert main(["list", "--bucket", BUCKET]) == 1
    captured = capsys.readouterr()
    assert re.search(
        r"^resnet-onnx-aaaaaaaaaaaaaaaa\.tar\.gz +MISSING +resnet +onnx$", captured.out, re.MULTILINE
    )
    assert "missing from the bucket" in captured.err


def test_remove_refuses_an_archive_the_manifest_points_to(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_build(tmp_path, ARCHIVES)
    main(["upload", "--from", str(tmp_path), "--bucket", BUCKET])

    assert main(["remove", "resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz", "--bucket", BUCKET]) == 1
    assert "current manifest still points to it (resnet/onnx)" in one_line_error(capsys)
    assert (
        s3.head_object(Bucket=BUCKET, Key="models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz")["ContentLength"] == 18
    )


def test_remove_with_force_drops_the_entry_from_the_manifest_first(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_build(tmp_path, ARCHIVES)
    main(["upload", "--from", str(tmp_path), "--bucket", BUCKET])

    assert main(["remove", "models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz", "--bucket", BUCKET, "--force"]) == 0
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="models/")["Contents"]]
    assert keys == ["models/resnet-torchscript-bbbbbbbbbbbbbbbb.tar.gz"]
    current = read_published_manifest(ModelStoreClient(s3, BUCKET))
    assert current is not None and current.target_models == {"resnet-torchscript-bbbbbbbbbbbbbbbb.tar.gz"}


def test_remove_deletes_an_unreferenced_archive_and_rejects_unknown_ones(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s3.put_object(Bucket=BUCKET, Key="models/old-onnx-1111111111111111.tar.gz", Body=b"old")

    assert main(["remove", "old-onnx-1111111111111111.tar.gz", "--bucket", BUCKET]) == 0
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix="models/")
    assert main(["remove", "old-onnx-1111111111111111.tar.gz", "--bucket", BUCKET]) == 1
    assert "models/old-onnx-1111111111111111.tar.gz: no such archive" in one_line_error(capsys)

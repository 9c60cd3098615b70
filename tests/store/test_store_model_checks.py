"""`upload` and `add` run the same model check (archive_inspection) on every archive: a hand-made build
directory cannot publish what `add` refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hostile_archives import (
    ELF_HEADER,
    custom_domain_onnx,
    write_class_method_torchscript,
    write_file_writing_torchscript,
    write_onnx_archive,
    write_plan_archive,
)
from store_support import BUCKET, one_line_error, write_build

from triton_mme.cli import main


def _bucket_keys(s3: Any) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def _hostile(kind: str, directory: Path, victim: Path) -> Path:
    if kind == "file-writing torchscript":
        return write_file_writing_torchscript(directory, victim)
    if kind == "class method torchscript":
        return write_class_method_torchscript(directory, victim)
    if kind == "elf plan":
        return write_plan_archive(directory, ELF_HEADER)
    return write_onnx_archive(directory, custom_domain_onnx())


REFUSALS = {
    "file-writing torchscript": "line 10: uses operator aten::from_file, which the build's exporters never",
    "class method torchscript": "calls mapper.touch; allowed only the operators of the catalog's exported",
    "elf plan": "model.plan starts with '\\x7fELF': it is an ELF executable or shared library",
    "custom-domain onnx": "node 'n' uses operator 'Evil' of domain 'com.example'; allowed domains:",
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(REFUSALS))
def test_upload_of_a_hand_made_build_directory_rechecks_every_model_file(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    victim = tmp_path / "operator-file.txt"
    victim.write_bytes(b"original contents")
    archive = _hostile(kind, tmp_path, victim)
    build = tmp_path / "build"
    write_build(build, {archive.name: archive.read_bytes()})

    assert main(["upload", "--from", str(build), "--bucket", BUCKET]) == 1
    assert REFUSALS[kind] in one_line_error(capsys)
    assert _bucket_keys(s3) == []
    assert victim.read_bytes() == b"original contents"


@pytest.mark.slow
def test_add_refuses_a_class_method_that_maps_a_file_before_loading_it(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "operator-file.txt"
    victim.write_bytes(b"original contents")
    archive = write_class_method_torchscript(tmp_path, victim)

    assert main(["add", str(archive), "--bucket", BUCKET, "--name", "m"]) == 1
    assert REFUSALS["class method torchscript"] in one_line_error(capsys)
    assert main(["verify", str(archive)]) == 1
    assert "calls mapper.touch" in one_line_error(capsys)
    assert victim.read_bytes() == b"original contents"
    assert _bucket_keys(s3) == []

"""`serve-local` and `serving-check` run the model check of `add` (archive_inspection) on the files they
load: an archive `add` refuses is never handed to Triton."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hostile_archives import (
    ELF_HEADER,
    custom_domain_onnx,
    write_file_writing_torchscript,
    write_onnx_archive,
    write_plan_archive,
)
from store_support import BUCKET, one_line_error

from triton_mme.cli import main
from triton_mme.core.files import file_sha256
from triton_mme.core.golden import GoldenData
from triton_mme.core.manifest import ArchiveRecord, TensorSpec
from triton_mme.local_triton.loader import ModelError, unpack
from triton_mme.serving_check.check import CheckSettings, check_archive


@pytest.mark.slow
def test_serve_local_refuses_the_file_writing_archive_add_refuses(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "operator-file.txt"
    victim.write_bytes(b"original contents")
    archive = write_file_writing_torchscript(tmp_path, victim)
    assert main(["add", str(archive), "--bucket", BUCKET, "--name", "m"]) == 1
    refused_by_add = one_line_error(capsys).removeprefix("error: ")

    with pytest.raises(ModelError) as caught:
        unpack(archive, tmp_path / "home" / "model")

    assert caught.value.status == 400
    assert str(caught.value) == refused_by_add
    assert "uses operator aten::from_file" in refused_by_add
    assert not (tmp_path / "home" / "model").exists()
    assert victim.read_bytes() == b"original contents"


@pytest.mark.parametrize("kind", ["elf plan", "custom-domain onnx"])
def test_serve_local_refuses_a_model_file_add_refuses(tmp_path: Path, kind: str) -> None:
    if kind == "elf plan":
        archive, reason = write_plan_archive(tmp_path, ELF_HEADER), "it is an ELF executable"
    else:
        archive, reason = write_onnx_archive(tmp_path, custom_domain_onnx()), "of domain 'com.example'"
    with pytest.raises(ModelError, match=reason):
        unpack(archive, tmp_path / "model")
    assert not (tmp_path / "model").exists()


class _NeverLoads:
    server = "test"
    gpu = None
    on_gpu = False

    def __init__(self) -> None:
        self.prepared: list[str] = []
        self.routes = self

    def prepare(self, target_model: str, model_dir: Path) -> None:
        self.prepared.append(target_model)

    def memory_used_mib(self) -> float | None:
        return None

    def load(self, *_: Any) -> Any:
        raise AssertionError("an archive that failed the model check reached Triton")


def _record(directory: Path, archive: Path, fmt: str) -> ArchiveRecord:
    """The archive's manifest record, with golden data for its one input and output."""
    inputs, outputs = (("x",), ("y",)) if fmt == "onnx" else (("input",), ("output",))
    golden = GoldenData({inputs[0]: np.zeros((1, 4), np.float32)}, {outputs[0]: np.zeros((1, 4), np.float32)})
    (directory / "golden-0000000000000000.npz").write_bytes(golden.to_bytes())
    return ArchiveRecord(
        name="m", format=fmt, target_model=archive.name, sha256=file_sha256(archive),
        size_bytes=archive.stat().st_size, source="external", weights="external", max_batch_size=2,
        inputs=(TensorSpec(name=inputs[0], datatype="FP32", dims=(4,)),),
        outputs=(TensorSpec(name=outputs[0], datatype="FP32", dims=(4,)),),
        files={"golden": "golden-0000000000000000.npz"},
    )  # fmt: skip


def test_the_serving_check_fails_an_archive_add_refuses_before_loading_it(tmp_path: Path) -> None:
    archive = write_onnx_archive(tmp_path, custom_domain_onnx())
    record = _record(tmp_path, archive, "onnx")
    target = _NeverLoads()

    served = check_archive(tmp_path, record, target, tmp_path / "scratch", CheckSettings())  # type: ignore[arg-type]

    assert not served.passed
    assert (
        served.error is not None and "node 'n' uses operator 'Evil' of domain 'com.example'" in served.error
    )
    assert target.prepared == []


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"sha256": "0" * 64}, "sha256 {sha256}... is not the manifest's 0000000000000000..."),
        (
            {"name": "n"},
            "the manifest records model 'n' in format tensorrt but the archive holds 'm-tensorrt' (tensorrt)",
        ),
    ],
)
def test_the_serving_check_fails_an_archive_unlike_its_record_before_loading_it(
    tmp_path: Path, change: dict[str, str], error: str
) -> None:
    archive = write_plan_archive(tmp_path, b"arbitrary bytes, no plan")
    record = _record(tmp_path, archive, "tensorrt").model_copy(update=change)
    target = _NeverLoads()

    served = check_archive(tmp_path, record, target, tmp_path / "scratch", CheckSettings())  # type: ignore[arg-type]

    assert not served.passed and served.error == error.format(sha256=file_sha256(archive)[:16])
    assert target.prepared == []

"""The package's one entry, `inspect_archive`: where it unpacks, what it leaves packed, and what it holds an
archive to (its name, its manifest record), each refusal one ArchiveError line."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hostile_archives import ELF_HEADER, write_plan_archive

from triton_mme.archive_inspection import ArchiveError, inspect_archive
from triton_mme.core.files import file_sha256
from triton_mme.core.formats import Format
from triton_mme.core.manifest import ArchiveRecord, TensorSpec

PLAN = b"arbitrary bytes, no plan"


def _record(archive: Path, **changes: str) -> ArchiveRecord:
    record = ArchiveRecord(
        name="m", format="tensorrt", target_model=archive.name, sha256=file_sha256(archive),
        size_bytes=archive.stat().st_size, source="external", weights="external", max_batch_size=2,
        inputs=(TensorSpec(name="input", datatype="FP32", dims=(4,)),),
        outputs=(TensorSpec(name="output", datatype="FP32", dims=(4,)),),
    )  # fmt: skip
    return record.model_copy(update=changes)


def _renamed(archive: Path, name: str) -> Path:
    return archive.rename(archive.with_name(name))


def test_dest_holds_the_unpacked_model_that_was_inspected(tmp_path: Path) -> None:
    extracted = inspect_archive(write_plan_archive(tmp_path, PLAN), tmp_path / "unpacked")

    assert extracted.model_dir == tmp_path / "unpacked" / "m-tensorrt"
    assert extracted.model_file.read_bytes() == PLAN
    assert extracted.contents.sha256 is None  # hashed only when a name or a record asks for it


def test_without_dest_the_model_is_inspected_in_a_scratch_directory_that_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    elf = write_plan_archive(tmp_path, ELF_HEADER)

    with pytest.raises(ArchiveError, match=r"^m-tensorrt-[0-9a-f]{16}\.tar\.gz: model.plan starts with"):
        inspect_archive(elf)
    assert inspect_archive(write_plan_archive(tmp_path, PLAN)).format is Format.TENSORRT
    assert list(scratch.iterdir()) == []


def test_packed_reads_the_layout_and_config_and_leaves_the_model_file_uninspected(tmp_path: Path) -> None:
    elf = write_plan_archive(tmp_path, ELF_HEADER)

    contents = inspect_archive(elf, packed=True)

    assert contents.format is Format.TENSORRT and contents.model_size == len(ELF_HEADER)
    assert [spec.name for spec in contents.inputs] == ["input"]
    with pytest.raises(ArchiveError, match="it is an ELF executable"):
        inspect_archive(elf, tmp_path / "unpacked")
    with pytest.raises(ValueError, match="packed=True with a dest"):
        inspect_archive(elf, tmp_path / "unpacked", packed=True)  # type: ignore[call-overload]


@pytest.mark.parametrize("packed", [False, True])
def test_identity_holds_the_name_to_the_sha256_of_the_file_read(tmp_path: Path, packed: bool) -> None:
    archive = write_plan_archive(tmp_path, PLAN)
    sha256 = file_sha256(archive)

    assert inspect_archive(archive, packed=packed, identity=True).sha256 == sha256
    renamed = _renamed(archive, "m-tensorrt-0000000000000000.tar.gz")
    assert inspect_archive(renamed, packed=packed).format is Format.TENSORRT  # no identity asked
    with pytest.raises(ArchiveError) as refused:
        inspect_archive(renamed, packed=packed, identity=True)
    assert str(refused.value) == (
        "m-tensorrt-0000000000000000.tar.gz: the name claims content hash 0000000000000000 but the file's "
        f"sha256 starts with {sha256[:16]}"
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("m-onnx-{digest}.tar.gz", "the name says onnx but the archive holds a tensorrt model"),
        (
            "other-tensorrt-{digest}.tar.gz",
            "the name says model 'other' but the archive's model directory is 'm-tensorrt'; "
            "allowed other-tensorrt",
        ),
        ("model.tar.gz", "'model.tar.gz' is not an archive name; allowed"),
    ],
)
def test_identity_refuses_a_name_that_states_another_model_or_format(
    tmp_path: Path, name: str, message: str
) -> None:
    archive = write_plan_archive(tmp_path, PLAN)
    renamed = _renamed(archive, name.format(digest=file_sha256(archive)[:16]))

    with pytest.raises(ArchiveError, match=f"^{renamed.name}: ") as refused:
        inspect_archive(renamed, tmp_path / "unpacked", identity=True)
    assert message in str(refused.value)


def test_a_record_passes_only_for_its_own_file_model_and_format(tmp_path: Path) -> None:
    archive = write_plan_archive(tmp_path, PLAN)
    record = _record(archive)
    sha256 = record.sha256

    assert inspect_archive(archive, record=record).sha256 == sha256
    holds = "but the archive holds 'm-tensorrt' (tensorrt)"
    refusals = {
        ("sha256", "0" * 64): f"sha256 {sha256[:16]}... is not the manifest's {'0' * 16}...",
        ("name", "n"): f"the manifest records model 'n' in format tensorrt {holds}",
        ("format", "onnx"): f"the manifest records model 'm' in format onnx {holds}",
    }
    for (field, value), message in refusals.items():
        with pytest.raises(ArchiveError) as refused:
            inspect_archive(archive, record=_record(archive, **{field: value}))
        assert str(refused.value) == f"{archive.name}: {message}", field


def test_a_record_also_holds_the_name(tmp_path: Path) -> None:
    archive = write_plan_archive(tmp_path, PLAN)
    renamed = _renamed(archive, "m-tensorrt-0000000000000000.tar.gz")

    with pytest.raises(ArchiveError, match="the name claims content hash 0000000000000000"):
        inspect_archive(renamed, record=_record(renamed))

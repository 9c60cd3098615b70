"""Archives: exact layout, reproducible bytes, and one-line rejection of anything Triton would not load."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest
from hostile_archives import write_bomb, write_layout, write_many_entries

from triton_mme.archive_inspection import archive as archive_module
from triton_mme.archive_inspection.archive import ArchiveError, extract_archive, read_archive
from triton_mme.archive_inspection.model_check import MODEL_CHECKS
from triton_mme.core.formats import Format
from triton_mme.core.limits import DEFAULT_MAX_UNPACKED_BYTES
from triton_mme.core.manifest import Manifest
from triton_mme.core.naming import ARCHIVE_NAME
from triton_mme.model_build.packaging import file_sha256, write_archive
from triton_mme.model_build.sandbox import MOUNT_VIEW_MADE
from triton_mme.model_build.verify import verify_archive

CONFIG = 'name: "m-onnx"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 2\n'


def _pack(out: Path, model: bytes = b"model bytes", config: str = CONFIG) -> Path:
    model_file = out.parent / f"{out.name}-model.onnx"
    model_file.write_bytes(model)
    packed = write_archive(
        out, name="m", fmt=Format.ONNX, model_dir="m-onnx", config_text=config, model_file=model_file,
        model_file_name="model.onnx",
    )  # fmt: skip
    return packed.path


def _raw_archive(path: Path, entries: list[tuple[str, bytes | None, bytes]]) -> Path:
    """entries: (name, file bytes or None for a directory, tar type)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = "../../etc/passwd"
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def test_same_inputs_give_byte_identical_archives_named_by_content(tmp_path: Path) -> None:
    first = _pack(tmp_path / "a")
    second = _pack(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    assert first.name == second.name
    match = ARCHIVE_NAME.match(first.name)
    assert match and file_sha256(first).startswith(match["digest"])
    assert _pack(tmp_path / "c", model=b"other bytes").name != first.name


def test_entries_have_fixed_order_owners_times_and_no_gzip_timestamp(tmp_path: Path) -> None:
    path = _pack(tmp_path / "a")
    with tarfile.open(path) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["m-onnx", "m-onnx/config.pbtxt", "m-onnx/1", "m-onnx/1/model.onnx"]
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, 0, "", "")}
    assert [oct(m.mode) for m in members] == ["0o755", "0o644", "0o755", "0o644"]
    header = path.read_bytes()[:10]
    assert header[3] == 0  # FLG: no file name stored
    assert header[4:8] == b"\0\0\0\0"  # MTIME
    with gzip.open(path) as stream:
        assert stream.read()


def test_read_and_extract_a_good_archive(tmp_path: Path) -> None:
    path = _pack(tmp_path / "a")
    contents = read_archive(path)
    assert (contents.model_dir, contents.format, contents.model_file_name) == (
        "m-onnx",
        Format.ONNX,
        "model.onnx",
    )
    assert contents.config.max_batch_size == 2
    model_dir = extract_archive(path, tmp_path / "x").model_dir
    assert sorted(str(p.relative_to(model_dir)) for p in model_dir.rglob("*")) == [
        "1", "1/model.onnx", "config.pbtxt",
    ]  # fmt: skip


D, F, L = tarfile.DIRTYPE, tarfile.REGTYPE, tarfile.SYMTYPE
CFG = CONFIG.encode()


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([("m/config.pbtxt", CFG, F)], "expected exactly '<dir>/config.pbtxt' and '<dir>/1/model"),
        (
            [("m/config.pbtxt", CFG, F), ("m/1/model.onnx", b"x", F), ("m/extra.txt", b"x", F)],
            "expected exactly",
        ),
        ([("a/config.pbtxt", CFG, F), ("b/1/model.onnx", b"x", F)], "expected exactly"),
        ([("m/config.pbtxt", CFG, F), ("m/2/model.onnx", b"x", F)], "expected exactly"),
        (
            [("m/config.pbtxt", CFG, F), ("m/1/model.onnx", b"x", F), ("/etc/cron.d", None, D)],
            "unsafe entry path",
        ),
        ([("m/config.pbtxt", CFG, F), ("m/../../evil", b"x", F)], "unsafe entry path"),
        ([("m/config.pbtxt", CFG, F), ("m/1/model.onnx", b"x", L)], "is a link or device"),
        ([("m/config.pbtxt", b"max_batch: 2", F), ("m/1/model.onnx", b"x", F)], "does not match Triton's"),
        (
            [("m/config.pbtxt", CFG, F), ("m/1/model.pt", b"x", F)],
            "config platform 'onnxruntime_onnx' does not serve",
        ),
        (
            [("m/config.pbtxt", CFG, F), ("m/1/weights.bin", b"x", F)],
            "model file 'weights.bin'; allowed model.onnx",
        ),
    ],
)
def test_bad_layouts_are_one_line_errors(tmp_path: Path, entries: list, message: str) -> None:
    path = _raw_archive(tmp_path / "bad.tar.gz", entries)
    with pytest.raises(ArchiveError) as caught:
        read_archive(path)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_not_an_archive(tmp_path: Path) -> None:
    path = tmp_path / "junk.tar.gz"
    path.write_bytes(b"not gzip")
    with pytest.raises(ArchiveError, match=r"junk.tar.gz: not a readable .tar.gz archive"):
        read_archive(path)


@pytest.mark.slow
def test_verify_runs_every_built_archive(built: tuple[Path, Manifest]) -> None:
    out, manifest = built
    for record in manifest.archives:
        report = verify_archive(out / record.target_model)
        runtime = "onnxruntime" if record.format == "onnx" else "torchscript"
        inspected = (
            "onnx operators in standard domains"
            if record.format == "onnx"
            else "torchscript operators of the exporters only"
        )
        assert report.checks == [
            "layout", "archive policy", MODEL_CHECKS[Format(record.format)], "config.pbtxt round trip",
            MOUNT_VIEW_MADE, inspected,
            f"{runtime} run at batch 1", f"{runtime} run at batch 4",
        ]  # fmt: skip
        assert not report.not_run


def test_verify_rejects_a_model_file_that_does_not_run(tmp_path: Path) -> None:
    # A well-formed protobuf (ir_version 7 and nothing else): the inspection passes, ONNX Runtime refuses it.
    path = _pack(tmp_path / "a", model=b"\x08\x07")
    with pytest.raises(ArchiveError, match=r"the model does not run: "):
        verify_archive(path)


def test_verify_refuses_a_model_file_that_is_no_protobuf_before_running_anything(tmp_path: Path) -> None:
    path = _pack(tmp_path / "a", model=b"this is not onnx")
    with pytest.raises(ArchiveError, match=r"not an ONNX model \(field 14 at byte 0 has wire type 4"):
        verify_archive(path)


def test_a_half_megabyte_archive_that_unpacks_to_512_mib_is_refused_before_inflating(tmp_path: Path) -> None:
    bomb = write_bomb(tmp_path / "bomb.tar.gz", model_bytes=512 * 1024 * 1024)
    assert bomb.stat().st_size < 600_000
    limit = 256 * 1024 * 1024
    for read in (
        lambda: read_archive(bomb, max_unpacked_bytes=limit),
        lambda: extract_archive(bomb, tmp_path / "out", max_unpacked_bytes=limit),
    ):
        with pytest.raises(ArchiveError) as caught:
            read()
        assert str(caught.value) == (
            "bomb.tar.gz: unpacks to more than 268,435,456 bytes ('m-onnx/1/model.onnx' alone is "
            "536,870,912); allowed at most 268,435,456 (--max-unpacked-mib)"
        )
    assert not (tmp_path / "out").exists()


def test_the_default_limit_fits_real_models_and_can_be_raised_where_it_is_used(tmp_path: Path) -> None:
    assert DEFAULT_MAX_UNPACKED_BYTES == 16 * 1024**3
    archive = write_bomb(tmp_path / "big.tar.gz", model_bytes=3 * 1024 * 1024)
    with pytest.raises(ArchiveError, match="unpacks to more than"):
        read_archive(archive, max_unpacked_bytes=2 * 1024 * 1024)
    assert read_archive(archive, max_unpacked_bytes=4 * 1024 * 1024).model_size == 3 * 1024 * 1024
    assert read_archive(archive).model_size == 3 * 1024 * 1024


def test_config_pbtxt_over_one_mib_is_refused_before_it_is_read(tmp_path: Path) -> None:
    config = CONFIG + "# " + "x" * (1024 * 1024) + "\n"
    archive = write_layout(tmp_path / "a.tar.gz", config=config)
    with pytest.raises(ArchiveError) as caught:
        read_archive(archive)
    assert str(caught.value) == f"a.tar.gz: config.pbtxt is {len(config):,} bytes; allowed at most 1,048,576"


def test_an_archive_with_thousands_of_entries_stops_at_the_ninth(tmp_path: Path) -> None:
    archive = write_many_entries(tmp_path / "many.tar.gz", 5000)
    with pytest.raises(ArchiveError, match=r"^many\.tar\.gz: more than 8 entries; expected exactly"):
        read_archive(archive)


RULE = "is not a model directory name; allowed letters, digits"
NOT_PRINTABLE = "that is not NUL-terminated printable ASCII"


@pytest.mark.parametrize(
    ("model_dir", "message"),
    [
        ("-rf", RULE),
        ("m onnx", RULE),
        # tarfile stores a non-ASCII name in a pax header, which the block scanner refuses first.
        ("m\u202eonnx", "pax extended header at byte 0 with records ['path']"),
        ("m\nonnx", NOT_PRINTABLE),
    ],
)
def test_the_model_directory_name_follows_its_rule(tmp_path: Path, model_dir: str, message: str) -> None:
    archive = write_layout(tmp_path / "a.tar.gz", model_dir=model_dir)
    with pytest.raises(ArchiveError) as caught:
        read_archive(archive)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value) and "\u202e" not in str(caught.value)


def test_what_is_extracted_is_what_was_checked_in_the_same_open_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An archive swapped on disk between the check and the extraction is never the one extracted."""
    path = _pack(tmp_path / "a")
    hostile = _raw_archive(
        tmp_path / "hostile.tar.gz",
        [("m-onnx/config.pbtxt", CFG, F), ("m-onnx/1/model.onnx", b"x", F), ("m-onnx/1/evil", None, L)],
    )
    checked = archive_module._contents

    def check_then_swap(*arguments: object) -> object:
        result = checked(*arguments)  # type: ignore[arg-type]
        os.replace(hostile, path)  # after the check, before the extraction
        return result

    monkeypatch.setattr(archive_module, "_contents", check_then_swap)
    extracted = extract_archive(path, tmp_path / "out")
    assert sorted(p.name for p in extracted.model_dir.rglob("*")) == ["1", "config.pbtxt", "model.onnx"]
    assert (extracted.model_file).read_bytes() == b"model bytes"

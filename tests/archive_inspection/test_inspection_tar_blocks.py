"""The strict tar block scanner: archives that Python's tarfile, GNU tar and SageMaker's unpacker could read
differently are refused before any of them reads one."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from triton_mme.archive_inspection.archive import ArchiveError, extract_archive, read_archive
from triton_mme.archive_inspection.tar_blocks import (
    MAX_TRAILING_ZERO_BYTES,
    TarEntry,
    TarFormatError,
    same_view,
    scan_entries,
)
from triton_mme.core.formats import Format
from triton_mme.model_build.packaging import write_archive

CONFIG = b'name: "m-onnx"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 2\n'
PYTHON_CONFIG = b'name: "m-onnx"\nbackend: "python"\nmax_batch_size: 2\n'
MODEL_PY = (
    b"import os\n\nclass TritonPythonModel:\n    def initialize(self, args):\n        os.system('id')\n"
)
END = bytes(1024)


def gnu_tar() -> str | None:
    """GNU tar, whose reading the scanner must agree with; required in CI (`CI` set), where a missing one
    fails instead of leaving out the comparison with it."""
    found = shutil.which("tar")
    if found:
        version = subprocess.run([found, "--version"], capture_output=True, text=True, check=False).stdout
        if "GNU tar" in version:
            return found
    if os.environ.get("CI"):
        pytest.fail("GNU tar is not installed on this CI runner; the tar tests compare with it")
    return None


def _header(name: str, size: int = 0, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def _patch(header: bytes, start: int, value: bytes, *, checksum: bool = True) -> bytes:
    """The header with `value` written at `start`; its checksum recomputed unless told not to."""
    block = bytearray(header)
    block[start : start + len(value)] = value
    if checksum:
        block[148:156] = b" " * 8
        block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def _padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % 512)


def _file(name: str, data: bytes) -> bytes:
    return _header(name, len(data)) + _padded(data)


def _directory(name: str) -> bytes:
    return _header(name, kind=tarfile.DIRTYPE)


GOOD = (
    _directory("m-onnx")
    + _file("m-onnx/config.pbtxt", CONFIG)
    + _directory("m-onnx/1")
    + _file("m-onnx/1/model.onnx", b"model bytes")
)
HIDDEN = _file("m-onnx/config.pbtxt", PYTHON_CONFIG) + _file("m-onnx/1/model.py", MODEL_PY)


def _gz(path: Path, *streams: bytes) -> Path:
    path.write_bytes(b"".join(gzip.compress(stream, mtime=0) for stream in streams))
    return path


def _refused(path: Path) -> str:
    with pytest.raises(ArchiveError) as caught:
        read_archive(path)
    message = str(caught.value)
    assert message.startswith(f"{path.name}: ") and "\n" not in message
    return message


def test_the_well_formed_stream_is_read(tmp_path: Path) -> None:
    """The hostile cases below differ from this one only where they say."""
    contents = read_archive(_gz(tmp_path / "good.tar.gz", GOOD + END))
    assert (contents.model_dir, contents.model_size) == ("m-onnx", 11)


def test_a_bad_checksum_in_the_middle_hiding_a_python_backend_is_refused(tmp_path: Path) -> None:
    """The issue's case: tarfile stops at the damaged header and sees a good ONNX archive; GNU tar skips it
    and unpacks a python-backend config.pbtxt over the good one, and its model.py."""
    damaged = _patch(_header("m-onnx/1/junk"), 148, b"000000\0 ", checksum=False)
    path = _gz(tmp_path / "hidden.tar.gz", GOOD + damaged + HIDDEN + END)
    with tarfile.open(path) as tar:
        assert tar.getnames() == ["m-onnx", "m-onnx/config.pbtxt", "m-onnx/1", "m-onnx/1/model.onnx"]
    if (tar := gnu_tar()) is not None:
        out = tmp_path / "gnu"
        out.mkdir()
        subprocess.run([tar, "-xzf", str(path), "-C", str(out)], capture_output=True, check=False)
        assert (out / "m-onnx/1/model.py").read_bytes() == MODEL_PY
        assert (out / "m-onnx/config.pbtxt").read_bytes() == PYTHON_CONFIG
    assert _refused(path) == (
        "hidden.tar.gz: tar header at byte 3,072 has a bad checksum (GNU tar would skip it and unpack what "
        "follows, Python's tarfile would stop there); allowed only intact headers"
    )
    with pytest.raises(ArchiveError, match="has a bad checksum"):
        extract_archive(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_prefix_field_that_tarfile_joins_and_gnu_tar_does_not_is_refused(tmp_path: Path) -> None:
    split = _patch(_patch(_header("config.pbtxt", len(CONFIG)), 345, b"m-onnx"), 257, b"ustar  \0")
    stream = _directory("m-onnx") + split + _padded(CONFIG) + _directory("m-onnx/1")
    path = _gz(tmp_path / "prefix.tar.gz", stream + _file("m-onnx/1/model.onnx", b"x") + END)
    with tarfile.open(path) as tar:
        assert "m-onnx/config.pbtxt" in tar.getnames()
    if (tar := gnu_tar()) is not None:
        listed = subprocess.run([tar, "-tzf", str(path)], capture_output=True, text=True, check=True)
        assert "config.pbtxt" in listed.stdout.splitlines()
    assert "uses its prefix or GNU fields (bytes 345-511)" in _refused(path)


@pytest.mark.parametrize(
    ("kind", "what"),
    [
        (b"g", "a pax global header"),
        (b"L", "a GNU long name"),
        (b"K", "a GNU long link name"),
        (b"S", "a GNU sparse file"),
        (b"7", "a contiguous file"),
        (b"V", "an unknown kind"),
    ],
)
def test_extension_headers_and_other_kinds_are_refused(tmp_path: Path, kind: bytes, what: str) -> None:
    # A GNU long name renames the entry after it: here the decoy becomes the model file.
    long_name = b"m-onnx/1/model.onnx\0"
    extension = _patch(_header("././@LongLink", len(long_name)), 156, kind) + _padded(long_name)
    stream = _directory("m-onnx") + _file("m-onnx/config.pbtxt", CONFIG) + _directory("m-onnx/1")
    path = _gz(tmp_path / "kind.tar.gz", stream + extension + _file("m-onnx/1/decoy", b"x") + END)
    if kind == b"L":
        with tarfile.open(path) as tar:
            assert tar.getnames()[-1] == "m-onnx/1/model.onnx"
    assert _refused(path) == (
        f"kind.tar.gz: entry '././@LongLink' has tar type {kind!r} ({what}); allowed only regular files "
        "(b'0') and directories (b'5')"
    )


def test_a_pax_header_other_than_one_size_record_is_refused(tmp_path: Path) -> None:
    records = b"28 path=m-onnx/1/model.onnx\n"
    pax = _patch(_header("././@PaxHeader", len(records)), 156, b"x") + _padded(records)
    stream = _directory("m-onnx") + _file("m-onnx/config.pbtxt", CONFIG) + _directory("m-onnx/1")
    path = _gz(tmp_path / "pax.tar.gz", stream + pax + _file("m-onnx/1/decoy", b"x") + END)
    with tarfile.open(path) as tar:
        assert tar.getnames()[-1] == "m-onnx/1/model.onnx"
    assert "pax extended header at byte 2,048 with records ['path']" in _refused(path)


def test_a_pax_size_the_ustar_field_could_hold_is_refused(tmp_path: Path) -> None:
    """Below 8 GiB a pax size only makes a reader that ignores pax headers read the data as headers."""
    record = b"11 size=11\n"
    pax = _patch(_header("././@PaxHeader", len(record)), 156, b"x") + _padded(record)
    model = _header("m-onnx/1/model.onnx", 0) + _padded(b"model bytes")
    stream = _directory("m-onnx") + _file("m-onnx/config.pbtxt", CONFIG) + _directory("m-onnx/1")
    path = _gz(tmp_path / "pax.tar.gz", stream + pax + model + END)
    with tarfile.open(path) as tar:
        assert tar.getmember("m-onnx/1/model.onnx").size == 11
    assert "pax extended header at byte 2,048 with records ['size']" in _refused(path)


def test_a_pax_header_before_nothing_or_before_a_directory_with_a_size_is_refused() -> None:
    record = b"19 size=9663676416\n"
    pax = _patch(_header("././@PaxHeader", len(record)), 156, b"x") + _padded(record)
    with pytest.raises(TarFormatError, match=r"pax extended header at byte 0 describes no entry"):
        list(scan_entries(io.BytesIO(gzip.compress(pax + END)), "a.tar.gz"))
    with pytest.raises(TarFormatError, match=r"pax size record before 'm/', which is not a file"):
        list(scan_entries(io.BytesIO(gzip.compress(pax + _directory("m") + END)), "a.tar.gz"))


def test_the_pax_times_pythons_add_writes_are_read(tmp_path: Path) -> None:
    (tmp_path / "m-onnx/1").mkdir(parents=True)
    (tmp_path / "m-onnx/config.pbtxt").write_bytes(CONFIG)
    (tmp_path / "m-onnx/1/model.onnx").write_bytes(b"model bytes")
    path = tmp_path / "added.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(tmp_path / "m-onnx", arcname="m-onnx")
    assert b"mtime=" in gzip.decompress(path.read_bytes())  # a float mtime needs a pax record
    assert read_archive(path).model_size == 11


def test_python_writes_a_pax_size_header_for_a_model_of_8_gib_or_more_and_it_is_accepted() -> None:
    info = tarfile.TarInfo("m-onnx/1/model.onnx")
    info.size = 9 * 1024**3
    header = info.tobuf(format=tarfile.PAX_FORMAT)
    assert header[156:157] == b"x"  # the project's packaging uses PAX_FORMAT
    entries = scan_entries(io.BytesIO(gzip.compress(header + bytes(4096))), "big.tar.gz")
    first = next(entries)
    assert (first.name, first.is_dir, first.size) == ("m-onnx/1/model.onnx", False, info.size)
    assert first.data_offset == 1536  # after the pax header, its record block and the file's header
    with pytest.raises(TarFormatError, match=r"the tar stream ends inside 'm-onnx/1/model\.onnx'"):
        next(entries)


def test_numbers_that_are_not_plain_octal_are_refused(tmp_path: Path) -> None:
    base_256 = _patch(_header("m-onnx/1/model.onnx"), 124, b"\x80" + (11).to_bytes(11, "big"))
    path = _gz(tmp_path / "b256.tar.gz", GOOD[:2048] + base_256 + _padded(b"model bytes") + END)
    with tarfile.open(path) as tar:
        assert tar.getmember("m-onnx/1/model.onnx").size == 11
    assert "holds non-ASCII bytes (base-256 numbers or names)" in _refused(path)

    garbage = _patch(_header("m-onnx/1/model.onnx", 11), 136, b"0000000\0junk")
    path = _gz(tmp_path / "mtime.tar.gz", GOOD[:2048] + garbage + _padded(b"model bytes") + END)
    assert "has a mtime field that is not plain octal (b'0000000\\x00junk')" in _refused(path)


@pytest.mark.parametrize(
    ("magic", "shown"), [(bytes(8), "b'\\x00\\x00"), (b"ustar\x0001", "b'ustar\\x0001'")]
)
def test_magic_other_than_ustar_or_gnu_is_refused(tmp_path: Path, magic: bytes, shown: str) -> None:
    old = _patch(_header("m-onnx/1/model.onnx", 11), 257, magic)
    path = _gz(tmp_path / "v7.tar.gz", GOOD[:2048] + old + _padded(b"model bytes") + END)
    assert f"tar header at byte 2,048 has magic {shown}" in _refused(path)


def test_names_must_be_nul_terminated_printable_ascii(tmp_path: Path) -> None:
    trailing = _patch(_header("m-onnx/1/model.onnx", 11), 19, b"\0hidden")
    path = _gz(tmp_path / "name.tar.gz", GOOD[:2048] + trailing + _padded(b"model bytes") + END)
    assert "has name 'm-onnx/1/model.onnx' that is not NUL-terminated printable ASCII" in _refused(path)
    full = _patch(_header("m-onnx/1/model.onnx", 11), 0, b"m" * 100)
    with pytest.raises(TarFormatError, match="allowed at most 99 printable ASCII characters"):
        list(scan_entries(io.BytesIO(gzip.compress(full + _padded(b"x") + END)), "a.tar.gz"))


def test_a_directory_with_data_is_refused(tmp_path: Path) -> None:
    """tarfile reads a directory's data blocks as the next headers: here a model file inside them."""
    hiding = _header("m-onnx/1", 512, tarfile.DIRTYPE)
    stream = GOOD[:1536] + hiding + _file("m-onnx/1/model.onnx", b"model bytes")
    path = _gz(tmp_path / "dir.tar.gz", stream + END)
    with tarfile.open(path) as tar:
        assert tar.getnames()[-1] == "m-onnx/1/model.onnx"
    assert _refused(path) == (
        "dir.tar.gz: directory 'm-onnx/1' declares 512 bytes of data; allowed only empty directory entries"
    )


def test_a_file_name_ending_in_a_slash_is_refused() -> None:
    stream = _header("m-onnx/", 0, tarfile.AREGTYPE) + END
    with pytest.raises(TarFormatError, match="file 'm-onnx/' ends with '/'"):
        list(scan_entries(io.BytesIO(gzip.compress(stream)), "a.tar.gz"))


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (_file("m-onnx/config.pbtxt", PYTHON_CONFIG), "m-onnx/config.pbtxt"),
        (_directory("m-onnx/1"), "m-onnx/1"),
        (_directory("m-onnx/1/model.onnx"), "m-onnx/1/model.onnx"),
    ],
    ids=["config twice", "directory twice", "file then directory"],
)
def test_a_name_twice_is_refused_in_any_spelling(tmp_path: Path, extra: bytes, named: str) -> None:
    path = _gz(tmp_path / "twice.tar.gz", GOOD + extra + END)
    assert _refused(path) == (
        f"twice.tar.gz: entry '{named}' appears twice (the last one would win on unpacking); allowed each "
        "path once"
    )


def test_a_dot_slash_spelling_of_a_name_is_one_path() -> None:
    stream = _file("m/a", b"x") + _file("./m/a", b"y") + END
    with pytest.raises(TarFormatError, match=r"entry '\./m/a' appears twice"):
        list(scan_entries(io.BytesIO(gzip.compress(stream)), "a.tar.gz"))


def test_entries_after_the_end_of_archive_marker_are_refused(tmp_path: Path) -> None:
    path = _gz(tmp_path / "after.tar.gz", GOOD + END + HIDDEN + END)
    if (tar := gnu_tar()) is not None:
        listed = subprocess.run(
            [tar, "-tzf", str(path), "--ignore-zeros"], capture_output=True, text=True, check=True
        )
        assert "m-onnx/1/model.py" in listed.stdout.splitlines()
    assert _refused(path) == (
        "after.tar.gz: data after the end-of-archive marker at byte 4,096 (entries tar --ignore-zeros "
        "would unpack); allowed only zero padding there"
    )


def test_a_lone_zero_block_before_more_entries_is_refused(tmp_path: Path) -> None:
    path = _gz(tmp_path / "lone.tar.gz", GOOD + bytes(512) + HIDDEN + END)
    with tarfile.open(path) as tar:
        assert len(tar.getnames()) == 4
    assert "a lone zero block at byte 3,072 instead of the end-of-archive marker" in _refused(path)


def test_a_second_gzip_member_is_refused(tmp_path: Path) -> None:
    path = _gz(tmp_path / "two.tar.gz", GOOD + END, HIDDEN + END)
    with gzip.open(path) as both:
        assert HIDDEN in both.read()  # gzip readers inflate both members as one stream
    assert _refused(path) == (
        "two.tar.gz: data after the gzip stream (a second gzip member or trailing bytes); allowed one gzip "
        "member"
    )


def test_bytes_after_the_gzip_member_are_refused(tmp_path: Path) -> None:
    path = _gz(tmp_path / "junk.tar.gz", GOOD + END)
    path.write_bytes(path.read_bytes() + b"junk")
    assert "data after the gzip stream" in _refused(path)


def test_zero_padding_past_its_bound_is_refused_without_inflating_it_all(tmp_path: Path) -> None:
    path = _gz(tmp_path / "zeros.tar.gz", GOOD + END + bytes(64 * MAX_TRAILING_ZERO_BYTES))
    assert "more than 1,048,576 bytes of zero padding after the end-of-archive marker" in _refused(path)


def test_a_missing_end_marker_or_truncated_data_is_refused(tmp_path: Path) -> None:
    assert "without its end-of-archive marker" in _refused(_gz(tmp_path / "open.tar.gz", GOOD))
    short = GOOD[:2048] + _header("m-onnx/1/model.onnx", 100_000) + b"only a little"
    assert _refused(_gz(tmp_path / "short.tar.gz", short)) == (
        "short.tar.gz: the tar stream ends inside 'm-onnx/1/model.onnx', which declares 100,000 bytes; "
        "allowed complete archives"
    )
    cut = _gz(tmp_path / "cut.tar.gz", GOOD + END)
    cut.write_bytes(cut.read_bytes()[:-12])
    assert "not a readable .tar.gz archive" in _refused(cut)


def test_a_list_of_entries_another_parser_sees_differently_is_refused() -> None:
    scanned = [TarEntry("m", True, 0, 512), TarEntry("m/a", False, 1, 1024)]
    same_view("a.tar.gz", scanned, [("m", True, 0, 512), ("m/a", False, 1, 1024)])
    with pytest.raises(TarFormatError) as caught:
        same_view("a.tar.gz", scanned, [("m", True, 0, 512)])
    assert str(caught.value) == (
        "a.tar.gz: the tar parsers disagree at entry 2 (2 entries here, 1 for Python's tarfile); allowed "
        "only archives every parser reads alike"
    )


def test_the_projects_own_archives_pass_the_scanner(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x07" * 3000)
    packed = write_archive(
        tmp_path / "out", name="m", fmt=Format.ONNX, model_dir="m-onnx", config_text=CONFIG.decode(),
        model_file=model, model_file_name="model.onnx",
    )  # fmt: skip
    with packed.path.open("rb") as raw:
        entries = [(e.name, e.is_dir, e.size) for e in scan_entries(raw, packed.path.name)]
    assert entries == [
        ("m-onnx", True, 0), ("m-onnx/config.pbtxt", False, len(CONFIG)), ("m-onnx/1", True, 0),
        ("m-onnx/1/model.onnx", False, 6000),
    ]  # fmt: skip
    assert read_archive(packed.path).model_size == 6000


@pytest.mark.parametrize("tar_format", ["gnu", "posix"])
def test_an_archive_gnu_tar_writes_is_read(tmp_path: Path, tar_format: str) -> None:
    (tmp_path / "m-onnx/1").mkdir(parents=True)
    (tmp_path / "m-onnx/config.pbtxt").write_bytes(CONFIG)
    (tmp_path / "m-onnx/1/model.onnx").write_bytes(b"model bytes")
    path = tmp_path / "gnu.tar.gz"
    tar = gnu_tar()
    if tar is None:
        pytest.skip("GNU tar is not installed")
    command = [tar, f"--format={tar_format}", "-czf", str(path), "-C", str(tmp_path), "m-onnx"]
    subprocess.run(command, check=True)
    assert read_archive(path).model_size == 11

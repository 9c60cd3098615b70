"""A strict reader of .tar.gz headers, block by block, for archives that every tar parser reads alike.

Python's tarfile, GNU tar and SageMaker's unpacker each forgive different damage: tarfile stops at a
header with a bad checksum, GNU tar skips it and unpacks what follows; tarfile joins a ustar `prefix`
to the name, GNU tar does not for its own magic; trailing entries after the end-of-archive marker are
read by `tar -i`. `scan_entries` accepts only headers on which they cannot disagree and refuses the
rest with one line naming the archive and what is allowed:

- one gzip member, nothing after it; the tar stream ends with two zero blocks, then only zeros
  (at most MAX_TRAILING_ZERO_BYTES of them);
- ustar (`ustar\\0` `00`) or GNU (`ustar  \\0`) headers whose checksum is their unsigned byte sum (every
  byte is ASCII, so the signed sum both parsers also accept is the same number);
- regular files (`0`, NUL) and directories (`5`) only; the one extended header is a pax header before
  an entry, holding only times (Python's `add` writes `mtime`, GNU tar's posix format three) and a
  `size` of 8 GiB or more (Python writes one past the ustar field), never a name;
- names of printable ASCII, NUL-terminated in their 100-byte field, an empty `prefix`, no link name;
  numeric fields in plain octal (no base-256); a directory with no data; no name twice.

It streams: file data is inflated in bounded chunks and dropped, never more than the sizes the headers
declare, and the caller sees each entry before its data is read, so a bound on sizes stops a
compressed bomb at its header.
"""

from __future__ import annotations

import posixpath
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from triton_mme.core.errors import UserError, quoted

BLOCK = 512
# Trailing zeros a writer pads the last record with: tarfile writes 10 KiB records, GNU tar 10 KiB by
# default and 1 MiB at its largest blocking factor (-b 2048).
MAX_TRAILING_ZERO_BYTES = 1024 * 1024
_CHUNK = 1024 * 1024
_GZIP = zlib.MAX_WBITS | 16
_USTAR_MAGIC, _GNU_MAGIC = b"ustar\x0000", b"ustar  \x00"
_REGULAR, _DIRECTORY, _PAX = (b"0", b"\x00"), b"5", b"x"
_LINKS_AND_DEVICES = (b"1", b"2", b"3", b"4", b"6")
_OTHER_KINDS = {
    b"x": "a second pax extended header",
    b"7": "a contiguous file",
    b"g": "a pax global header",
    b"L": "a GNU long name",
    b"K": "a GNU long link name",
    b"S": "a GNU sparse file",
}
_OCTAL = re.compile(rb" *[0-7]+[ \x00]*")
_PAX_RECORD = re.compile(rb"(?P<length>[1-9][0-9]{0,2}) (?P<key>[a-z]{1,16})=")
_TIME = re.compile(rb"-?(?:0|[1-9][0-9]{0,18})(?:\.[0-9]{1,9})?")
_PAX_VALUES = {"size": re.compile(rb"[1-9][0-9]{0,18}"), "mtime": _TIME, "atime": _TIME, "ctime": _TIME}
# The ustar size field holds 11 octal digits; Python writes a pax `size` record from 8 GiB on.
_USTAR_SIZE_LIMIT = 8**11
_PAX_KEY = re.compile(rb"(?:^|\n)[0-9]+ ([^=\n]{1,32})=")
_PRINTABLE = re.compile(r"[\x20-\x7e]+")
# (field, start, end) of the numeric fields every header must hold in plain octal.
_NUMBERS = (("mode", 100, 108), ("uid", 108, 116), ("gid", 116, 124), ("size", 124, 136), ("mtime", 136, 148))


class TarFormatError(UserError, ValueError):
    """A tar stream that parsers could read differently; the message is one line."""


@dataclass(frozen=True)
class TarEntry:
    """An entry as tarfile names it: a directory's name without its trailing '/'."""

    name: str
    is_dir: bool
    size: int
    data_offset: int  # in the uncompressed stream, as tarfile's TarInfo.offset_data


class _Inflated:
    """The uncompressed bytes of one gzip member, read from `raw` in bounded chunks."""

    def __init__(self, raw: BinaryIO, where: str):
        self.raw, self.where = raw, where
        self.inflater = zlib.decompressobj(_GZIP)
        self.pending = b""  # compressed bytes not yet inflated
        self.offset = 0  # uncompressed bytes handed out so far

    def read(self, count: int) -> bytes:
        """Up to `count` bytes; fewer only at the end of the gzip member."""
        parts: list[bytes] = []
        wanted = count
        while wanted and not self.inflater.eof:
            exhausted = False
            if not self.pending:
                self.pending = self.raw.read(_CHUNK)
                exhausted = not self.pending
            part = self.inflater.decompress(self.pending, min(wanted, _CHUNK))
            self.pending = self.inflater.unconsumed_tail
            if exhausted and not part and not self.inflater.eof:
                raise TarFormatError(
                    f"{self.where}: not a readable .tar.gz archive (the gzip stream ends early)"
                )
            parts.append(part)
            wanted -= len(part)
        data = b"".join(parts)
        self.offset += len(data)
        return data

    def skip(self, count: int) -> int:
        """Drop up to `count` bytes without holding them; the number dropped."""
        dropped = 0
        while dropped < count:
            part = self.read(min(count - dropped, _CHUNK))
            if not part:
                break
            dropped += len(part)
        return dropped

    def finish(self) -> None:
        """Refuse anything after the gzip member: a second member or other bytes."""
        if self.inflater.unused_data or self.pending or self.raw.read(1):
            raise TarFormatError(
                f"{self.where}: data after the gzip stream (a second gzip member or trailing bytes); "
                "allowed one gzip member"
            )


def _blocks(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def _text(where: str, header: bytes, start: int, end: int, field: str, at: int) -> str:
    """A NUL-terminated printable-ASCII field, NUL-padded to its end."""
    raw = header[start:end]
    value, nul, rest = raw.partition(b"\x00")
    if not nul or rest.strip(b"\x00") or (value and not _PRINTABLE.fullmatch(value.decode("latin-1"))):
        shown = value.decode("latin-1")
        raise TarFormatError(
            f"{where}: tar header at byte {at:,} has {field} {quoted(shown)} that is not NUL-terminated "
            f"printable ASCII; allowed at most {end - start - 1} printable ASCII characters"
        )
    return value.decode("ascii")


def _number(where: str, header: bytes, start: int, end: int, field: str, at: int) -> int:
    raw = header[start:end]
    if not _OCTAL.fullmatch(raw):
        raise TarFormatError(
            f"{where}: tar header at byte {at:,} has a {field} field that is not plain octal "
            f"({raw!r}); allowed octal digits ended by NUL or space"
        )
    return int(raw.strip(b" \x00"), 8)


def _checked_header(where: str, header: bytes, at: int) -> tuple[bytes, str, int]:
    """The type, name and size of one non-zero header, or a refusal."""
    stored = header[148:156]
    unsigned = sum(header[:148]) + 8 * 0x20 + sum(header[156:])
    if not _OCTAL.fullmatch(stored) or int(stored.strip(b" \x00"), 8) != unsigned:
        raise TarFormatError(
            f"{where}: tar header at byte {at:,} has a bad checksum (GNU tar would skip it and unpack "
            "what follows, Python's tarfile would stop there); allowed only intact headers"
        )
    if any(byte > 0x7F for byte in header):
        raise TarFormatError(
            f"{where}: tar header at byte {at:,} holds non-ASCII bytes (base-256 numbers or names); "
            "allowed plain ASCII headers"
        )
    if header[257:265] not in (_USTAR_MAGIC, _GNU_MAGIC):
        raise TarFormatError(
            f"{where}: tar header at byte {at:,} has magic {header[257:265]!r}; allowed ustar "
            "(b'ustar\\x0000') or GNU (b'ustar  \\x00')"
        )
    if header[345:].strip(b"\x00"):
        raise TarFormatError(
            f"{where}: tar header at byte {at:,} uses its prefix or GNU fields (bytes 345-511), which "
            "parsers join to the name differently; allowed names in the name field only, the rest NUL"
        )
    kind = header[156:157]
    name = _text(where, header, 0, 100, "name", at)
    if not name:
        raise TarFormatError(f"{where}: tar header at byte {at:,} has an empty name; allowed named entries")
    if kind not in (*_REGULAR, _DIRECTORY, _PAX):
        raise _kind_refusal(where, kind, name)
    for field, start, end in _NUMBERS:
        _number(where, header, start, end, field, at)
    for field, start, end in (("devmajor", 329, 337), ("devminor", 337, 345)):
        if header[start:end].strip(b"\x00") and _number(where, header, start, end, field, at):
            raise TarFormatError(
                f"{where}: entry {quoted(name)} has a device number; allowed only files and directories"
            )
    linked = _text(where, header, 157, 257, "link name", at)
    if linked:
        raise TarFormatError(
            f"{where}: entry {quoted(name)} has link name {quoted(linked)}; allowed only files and "
            "directories"
        )
    _text(where, header, 265, 297, "owner name", at)
    _text(where, header, 297, 329, "group name", at)
    return kind, name, _number(where, header, 124, 136, "size", at)


def _kind_refusal(where: str, kind: bytes, name: str) -> TarFormatError:
    if kind in _LINKS_AND_DEVICES:
        return TarFormatError(f"{where}: entry {quoted(name)} is a link or device; only files allowed")
    what = _OTHER_KINDS.get(kind, "an unknown kind")
    return TarFormatError(
        f"{where}: entry {quoted(name)} has tar type {kind!r} ({what}); allowed only regular files "
        "(b'0') and directories (b'5')"
    )


def _pax_records(where: str, stream: _Inflated, size: int, at: int) -> dict[str, bytes]:
    """The records of a pax extended header, each `<length> <key>=<value>\n`: only times, and a size
    past what the ustar field holds; never a name, a link or a charset."""
    data = stream.read(_blocks(min(size, BLOCK)))
    records: dict[str, bytes] = {}
    position = 0
    while size <= BLOCK and position < size:
        record = _PAX_RECORD.match(data, position, size)
        end = position + int(record["length"]) if record else size + 1
        if record is None or end > size or data[end - 1 : end] != b"\n":
            break
        key, value = record["key"].decode("ascii"), data[record.end() : end - 1]
        if key in records or key not in _PAX_VALUES or not _PAX_VALUES[key].fullmatch(value):
            break
        if key == "size" and int(value) < _USTAR_SIZE_LIMIT:
            break
        records[key] = value
        position = end
    if size > BLOCK or position != size or data[size:].strip(b"\x00"):
        keys = sorted({key.decode("latin-1") for key in _PAX_KEY.findall(data)})
        raise TarFormatError(
            f"{where}: pax extended header at byte {at:,} with records {quoted(keys)} (a name outside "
            "printable ASCII or over 99 characters needs one); allowed only 'mtime', 'atime', 'ctime' "
            "and 'size' of 8 GiB or more, each once"
        )
    return records


def _identity(name: str) -> str:
    """What an unpacker writes to: 'a/b', 'a/b/' and './a/b' are one path."""
    return posixpath.normpath(name).lstrip("/")


def scan_entries(raw: BinaryIO, where: str) -> Iterator[TarEntry]:
    """Each entry of the .tar.gz read from `raw`, checked; its data is skipped only when the caller asks
    for the next one. After the last: the end marker, the zero padding and the gzip trailer."""
    stream = _Inflated(raw, where)
    seen: set[str] = set()
    pax: dict[str, bytes] | None = None
    pax_at = 0
    while True:
        at = stream.offset
        header = stream.read(BLOCK)
        if len(header) < BLOCK:
            raise TarFormatError(
                f"{where}: the tar stream ends at byte {at + len(header):,} without its end-of-archive "
                "marker; allowed complete archives (two zero blocks at the end)"
            )
        if not header.strip(b"\x00"):
            break
        kind, name, size = _checked_header(where, header, at)
        if kind == _PAX and pax is None:
            pax, pax_at = _pax_records(where, stream, size, at), at
            continue
        if kind == _PAX:
            raise _kind_refusal(where, kind, name)
        if pax is not None and "size" in pax:
            if kind == _DIRECTORY or size != 0:
                raise TarFormatError(
                    f"{where}: pax size record before {quoted(name)}, which is not a file whose own size "
                    "field is 0; allowed only as Python writes it for a file of 8 GiB or more"
                )
            size = int(pax["size"])
        is_dir = kind == _DIRECTORY
        listed = name[:-1] if is_dir and name.endswith("/") else name
        if is_dir and size:
            raise TarFormatError(
                f"{where}: directory {quoted(listed)} declares {size:,} bytes of data; allowed only empty "
                "directory entries"
            )
        if not is_dir and name.endswith("/"):
            raise TarFormatError(
                f"{where}: file {quoted(name)} ends with '/' (tar readers take it for a directory); "
                "allowed file names without a trailing '/'"
            )
        identity = _identity(listed)
        if identity in seen:
            raise TarFormatError(
                f"{where}: entry {quoted(listed)} appears twice (the last one would win on unpacking); "
                "allowed each path once"
            )
        seen.add(identity)
        yield TarEntry(listed, is_dir, size, stream.offset)
        pax = None
        if stream.skip(_blocks(size)) < _blocks(size):
            raise TarFormatError(
                f"{where}: the tar stream ends inside {quoted(listed)}, which declares {size:,} bytes; "
                "allowed complete archives"
            )
    if pax is not None:
        raise TarFormatError(
            f"{where}: pax extended header at byte {pax_at:,} describes no entry; allowed only before a file"
        )
    _check_end(where, stream, at)


def _check_end(where: str, stream: _Inflated, at: int) -> None:
    second = stream.read(BLOCK)
    if len(second) < BLOCK or second.strip(b"\x00"):
        raise TarFormatError(
            f"{where}: a lone zero block at byte {at:,} instead of the end-of-archive marker; allowed "
            "two zero blocks at the end (tar --ignore-zeros reads on past one)"
        )
    padding = stream.read(MAX_TRAILING_ZERO_BYTES + 1)
    if padding.strip(b"\x00"):
        first = len(padding) - len(padding.lstrip(b"\x00"))
        raise TarFormatError(
            f"{where}: data after the end-of-archive marker at byte {at + 2 * BLOCK + first:,} (entries "
            "tar --ignore-zeros would unpack); allowed only zero padding there"
        )
    if len(padding) > MAX_TRAILING_ZERO_BYTES:
        raise TarFormatError(
            f"{where}: more than {MAX_TRAILING_ZERO_BYTES:,} bytes of zero padding after the end-of-archive "
            f"marker; allowed at most {MAX_TRAILING_ZERO_BYTES:,}"
        )
    stream.finish()


def same_view(where: str, scanned: list[TarEntry], listed: list[tuple[str, bool, int, int]]) -> None:
    """Refuse an archive whose entries another parser lists differently: (name, is a directory, size,
    data offset) of each entry, in order."""
    mine = [(e.name, e.is_dir, e.size, e.data_offset) for e in scanned]
    if mine != listed:
        first = next(
            (i for i, (a, b) in enumerate(zip(mine, listed, strict=False)) if a != b),
            min(len(mine), len(listed)),
        )
        raise TarFormatError(
            f"{where}: the tar parsers disagree at entry {first + 1} ({len(mine)} entries here, "
            f"{len(listed)} for Python's tarfile); allowed only archives every parser reads alike"
        )

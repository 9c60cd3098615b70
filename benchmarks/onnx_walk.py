"""How long the ONNX wire-format walk (archive_inspection/onnx_check.py) takes on hostile 512 MiB files.

`python -m benchmarks.onnx_walk [--mib N] [--out FILE]`

- `verify` (the command, in a child process) of a 0.5 MB archive whose model.onnx is N MiB of zeros;
- the walk alone on that file of zeros;
- the walk alone on three N MiB files of valid-looking protobuf made of the smallest fields there are (two
  bytes each): model-level varints, empty graph nodes, one node of empty op_type fields.

Each row records seconds, the one-line refusal, and the process's peak resident memory so far. Writes
benchmarks/results/onnx-walk.json; run it under `/usr/bin/time -v` for the whole run's memory.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from triton_mme.archive_inspection.archive import ArchiveError
from triton_mme.archive_inspection.onnx_check import MAX_ONNX_FIELDS, check_onnx_file
from triton_mme.core.files import file_sha256

RESULT_FILE = Path(__file__).parent / "results" / "onnx-walk.json"
CONFIG = b'name: "m-onnx"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 2\n'
CHUNK = 1 << 20


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _write_repeated(path: Path, prefix: bytes, unit: bytes, size: int) -> None:
    """`prefix`, then `unit` repeated to `size` bytes in all, written in 1 MiB chunks."""
    chunk = unit * (CHUNK // len(unit))
    with path.open("wb") as stream:
        stream.write(prefix)
        left = size - len(prefix)
        while left > 0:
            part = chunk[: min(left, len(chunk))]
            stream.write(part)
            left -= len(part)


def tiny_field_files(size: int) -> dict[str, Callable[[Path], None]]:
    """Valid-looking ModelProto files of `size` bytes made of two-byte fields, by what they repeat."""
    graph_key, node_key = b"\x3a", b"\x0a"  # ModelProto.graph (7), GraphProto.node (1), both length-delimited
    nodes_body = size - 1 - len(_varint(size))
    node_body = nodes_body - 1 - len(_varint(nodes_body))
    return {
        "model-level varints (ir_version 0, repeated)": lambda p: _write_repeated(p, b"", b"\x08\x00", size),
        "empty graph nodes": lambda p: _write_repeated(p, graph_key + _varint(nodes_body), b"\x0a\x00", size),
        "one node of empty op_type fields": lambda p: _write_repeated(
            p, graph_key + _varint(nodes_body) + node_key + _varint(node_body), b"\x22\x00", size
        ),
    }


class _Zeros(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count


def zero_bomb_archive(directory: Path, size: int) -> Path:
    """A well-formed archive, named by its content as the build names one, whose model.onnx is zeros."""
    path = directory / "bomb.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=6) as tar:
        for name, data in (("m-onnx", None), ("m-onnx/config.pbtxt", CONFIG), ("m-onnx/1", None)):
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("m-onnx/1/model.onnx")
        info.size = size
        tar.addfile(info, io.BufferedReader(_Zeros(size), CHUNK))
    return path.rename(path.with_name(f"m-onnx-{file_sha256(path)[:16]}.tar.gz"))


def _peak_mib() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def time_walk(case: str, path: Path) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        fields = check_onnx_file("a.tar.gz", path)
        outcome = f"accepted ({fields:,} fields read)"
    except ArchiveError as error:
        outcome = str(error)
    seconds = time.perf_counter() - started
    return {
        "case": case,
        "bytes": path.stat().st_size,
        "seconds": round(seconds, 2),
        "outcome": outcome,
        "peak_rss_mib": _peak_mib(),
    }


def time_verify(archive: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "triton_mme", "verify", str(archive)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    lines = (done.stdout + done.stderr).strip().splitlines()
    return {
        "case": "triton-mme verify of the zero-filled archive",
        "archive_bytes": archive.stat().st_size,
        "seconds": round(seconds, 2),
        "exit_status": done.returncode,
        "outcome": lines[-1] if lines else "",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.onnx_walk", description=__doc__)
    parser.add_argument("--mib", type=int, default=512, help="size of each hostile model.onnx (default 512)")
    parser.add_argument("--out", type=Path, default=RESULT_FILE)
    args = parser.parse_args(argv)
    size = args.mib * 1024 * 1024
    rows = []
    with tempfile.TemporaryDirectory(prefix="onnx-walk-") as scratch:
        directory = Path(scratch)
        rows.append(time_verify(zero_bomb_archive(directory, size)))
        print(rows[-1], flush=True)
        zeros = directory / "zeros.onnx"
        _write_repeated(zeros, b"", b"\x00", size)
        rows.append(time_walk("walk of the file of zeros", zeros))
        print(rows[-1], flush=True)
        zeros.unlink()
        for case, write in tiny_field_files(size).items():
            path = directory / "fields.onnx"
            write(path)
            rows.append(time_walk(case, path))
            print(rows[-1], flush=True)
            path.unlink()
    report = {
        "command": " ".join(
            ["python -m benchmarks.onnx_walk", *(argv if argv is not None else sys.argv[1:])]
        ),
        "cpus": os.cpu_count(),
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "max_onnx_fields": MAX_ONNX_FIELDS,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

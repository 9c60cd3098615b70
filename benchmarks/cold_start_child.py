"""One cold start of an ONNX archive in a fresh interpreter.

Usage: `python -m benchmarks.cold_start_child ARCHIVE`.

Libraries are imported before the clock starts (a Triton server has its backend loaded already).
Prints one JSON line of seconds: unpack, session, warmup, first_inference, load_and_first (session +
warm-up + first request, model already on disk) and total (everything from the packed archive).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import onnxruntime  # noqa: F401  (imported before timing on purpose)

from benchmarks.onnx_load import (
    create_session,
    model_file,
    read_config,
    unpack,
    warmup_requests,
)
from benchmarks.ort_options import session_options
from model_build.samples import sample_inputs
from model_build.triton_config import tensor_specs


def cold_start(archive: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="cold-start-") as scratch:
        start = time.perf_counter()
        model_dir = unpack(archive, Path(scratch))
        unpacked = time.perf_counter()
        config = read_config(model_dir)
        session = create_session(model_file(model_dir, config), session_options(config))
        created = time.perf_counter()
        for feeds in warmup_requests(config):
            session.run(None, feeds)
        warmed = time.perf_counter()
        session.run(None, sample_inputs(tensor_specs(config.input), 1, seed=1))
        done = time.perf_counter()
    return {
        "unpack": unpacked - start,
        "session": created - unpacked,
        "warmup": warmed - created,
        "first_inference": done - warmed,
        "load_and_first": done - unpacked,
        "total": done - start,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m benchmarks.cold_start_child ARCHIVE.tar.gz", file=sys.stderr)
        return 2
    print(json.dumps(cold_start(Path(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

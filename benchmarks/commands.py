"""`triton-mme bench`: run the benchmark suite (results in benchmarks/results/)."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from benchmarks.options import add_arguments


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser(
        "bench",
        help="run the benchmark suite and write its results to benchmarks/results/",
        description="Run the measured comparisons of the project's choices against their alternatives.",
    )
    add_arguments(bench)
    bench.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    from benchmarks.__main__ import run

    return run(args, shlex.join(["triton-mme", *sys.argv[1:]]))

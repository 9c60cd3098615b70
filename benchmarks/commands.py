"""`triton-mme bench`: run the benchmark suite (see benchmarks/__main__.py for its options)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser(
        "bench",
        help="run the benchmark suite and write its results to benchmarks/results/",
        description="Run the measured comparisons; every option after `bench` is the suite's own "
        "(--quick, --only NAME ..., --out DIR; see `triton-mme bench -- --help`).",
    )
    bench.add_argument("suite_args", nargs=argparse.REMAINDER, help="options for the suite")
    bench.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    from benchmarks.__main__ import main

    return main([a for a in args.suite_args if a != "--"])

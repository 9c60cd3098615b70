"""The suite's command-line options (`python -m benchmarks`)."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
# The suite's benchmark names, for `triton-mme bench --help` without importing the suite (a test compares them
# with benchmarks.suite.BENCHMARKS).
BENCHMARK_NAMES = (
    "cold_start", "resnet50", "text", "payloads", "synth", "build", "gpu", "client_invoke", "serving_check",
    "serving_check_gpu", "plan", "loadgen", "hit_rate", "log_parser", "growth", "placement",
)  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser, *, names: list[str] | None = None) -> None:
    """The suite's options; `names` are the benchmarks `--only` accepts."""
    parser.add_argument("--quick", action="store_true", help="small counts and inputs, for iteration only")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=names,
        metavar="NAME",
        help=f"run only these: {', '.join(names or BENCHMARK_NAMES)} (default: all)",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="results folder (default benchmarks/results)"
    )

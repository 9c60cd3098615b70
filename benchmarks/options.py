"""The suite's command-line options (`python -m benchmarks`)."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def add_arguments(parser: argparse.ArgumentParser, *, names: list[str] | None = None) -> None:
    """The suite's options; `names` are the benchmarks `--only` accepts."""
    parser.add_argument("--quick", action="store_true", help="small counts and inputs, for iteration only")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=names,
        metavar="NAME",
        help=f"run only these: {', '.join(names)}" if names else "run only these benchmarks",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="results folder (default benchmarks/results)"
    )

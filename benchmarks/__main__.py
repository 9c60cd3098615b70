"""`python -m benchmarks [--quick] [--only NAME ...] [--out DIR]`: run the suite and write its results.

The suite runs from a checkout (`make bench`); it is not part of the installed package or its command line.

Exit status 0 when every selected benchmark ran (or was not run for a stated reason such as no GPU),
1 when one failed (its section records the one-line reason), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from benchmarks.context import RunContext
from benchmarks.machine import describe_machine, library_versions
from benchmarks.options import add_arguments
from benchmarks.report import write_report
from benchmarks.results import Report
from benchmarks.suite import BENCHMARKS, run_benchmark


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="Run the benchmark suite.")
    add_arguments(parser, names=[benchmark.name for benchmark in BENCHMARKS])
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    return run(parse_args(arguments), shlex.join(["python", "-m", "benchmarks", *arguments]))


def run(args: argparse.Namespace, command: str) -> int:
    """Run the selected benchmarks and write the results; `command` is recorded as what was run."""
    selected = [b for b in BENCHMARKS if not args.only or b.name in args.only]
    report = Report(
        date=date.today().isoformat(),
        machine=describe_machine(),
        versions=library_versions(),
        command=command,
        quick=args.quick,
    )
    # Other work on the machine skews every figure (PyTorch eager most): the load is recorded with them.
    report.machine["load_average_1min_before"] = round(os.getloadavg()[0], 2)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="benchmarks-") as scratch:
        ctx = RunContext(quick=args.quick, scratch=Path(scratch))
        for benchmark in selected:
            print(f"[bench] {benchmark.title} ...", file=sys.stderr, flush=True)
            section = run_benchmark(benchmark, ctx)
            print(f"[bench]   {section.status}", file=sys.stderr, flush=True)
            report.sections.append(section)
    report.duration_s = time.perf_counter() - started
    report.machine["load_average_1min_after"] = round(os.getloadavg()[0], 2)
    for path in write_report(report, args.out):
        print(path)
    failed = [s for s in report.sections if s.status.startswith("failed")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

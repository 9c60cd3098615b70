"""Build parallelism: `triton-mme build --workers 1`, `--workers 2` and a plain notebook-style script
(benchmarks/plain_build.py) on the same small checkpoints, in one run.

    flock /tmp/model-build.lock .venv/bin/python -m benchmarks.build_workers \\
        [--checkpoints 20] [--rounds 2] [--out FILE]

N SqueezeNet 1.1 state dicts (10 classes, 2.9 MB each, benchmarks/checkpoints.py) in one `variants: listed`
family, ONNX only, input 3x32x32, max batch 2; `triton-mme lock` once. Then each way builds all N into an
empty folder (no build cache) in a fresh process, with PyTorch's default threads and with OMP_NUM_THREADS=1,
the ways' order rotated each round: wall time, CPU time (user + system) and peak resident memory of the whole
process tree (benchmarks/process_tree.py, sampled every 50 ms; a forked worker's shared pages count once per
process). Writes JSON to stdout (or --out) and a Markdown table to stderr, each way beside the plain script
with the same threads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from benchmarks import plain_build
from benchmarks.checkpoints import write_state_dicts
from benchmarks.machine import describe_machine, load_average
from benchmarks.process_tree import run_measured
from benchmarks.results import write_figures

CHECKPOINTS = 20
ROUNDS = 2
FAMILY = {
    "family": "workers",
    "architecture": f"torchvision:{plain_build.ARCHITECTURE}",
    "formats": ["onnx"],
    "max_batch_size": plain_build.MAX_BATCH_SIZE,
    "input_shape": list(plain_build.INPUT_SHAPE),
    "source": "checkpoint:checkpoints/{variant}.safetensors",
    "variants": "listed",
}
REPO_ROOT = Path(__file__).resolve().parents[1]
# Each way with PyTorch's default threads (one per core), then with one thread per process: two workers
# with two threads each on two cores are four threads, and OpenMP's waiting threads spin on a busy core.
ONE_THREAD = "OMP_NUM_THREADS=1"
WAYS = (
    "build --workers 1",
    "build --workers 2",
    "plain script",
    f"build --workers 1, {ONE_THREAD}",
    f"build --workers 2, {ONE_THREAD}",
    f"plain script, {ONE_THREAD}",
)


def _command(way: str, catalog: Path, checkpoints: list[Path], out: Path) -> list[str]:
    what = way.partition(",")[0]
    if what == "plain script":
        return [sys.executable, "-m", "benchmarks.plain_build", "--out", str(out), *map(str, checkpoints)]
    workers = what.rpartition(" ")[2]
    return [sys.executable, "-m", "triton_mme", "build", "--catalog", str(catalog), "--out", str(out),
            "--workers", workers, "--no-progress"]  # fmt: skip


def _environment(way: str) -> dict[str, str]:
    variable, _, value = ONE_THREAD.partition("=")
    return {**os.environ, variable: value} if way.endswith(ONE_THREAD) else dict(os.environ)


def measure(count: int, rounds: int, scratch: Path) -> dict[str, Any]:
    checkpoints = write_state_dicts(scratch / "checkpoints", count, classes=plain_build.CLASSES)
    catalog = scratch / "models.yaml"
    catalog.write_text(yaml.safe_dump({"models": [FAMILY]}), encoding="utf-8")
    cli = [sys.executable, "-m", "triton_mme"]
    locked = run_measured([*cli, "lock", "--catalog", str(catalog)], cwd=REPO_ROOT)
    if locked.returncode != 0:
        raise RuntimeError(f"triton-mme lock: exit {locked.returncode}: {locked.stderr.strip()[-400:]}")
    runs: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    load_before = load_average()
    for round_index in range(rounds):
        for way in WAYS[round_index % len(WAYS) :] + WAYS[: round_index % len(WAYS)]:
            out = scratch / f"out-{round_index}-{len(runs[way])}-{WAYS.index(way)}"
            command = _command(way, catalog, checkpoints, out)
            run = run_measured(command, cwd=REPO_ROOT, env=_environment(way))
            archives = len(list(out.glob("*.tar.gz")))
            if run.returncode != 0 or archives != count:
                last = (run.stderr.strip().splitlines() or ["no output"])[-1]
                raise RuntimeError(f"{way}: exit {run.returncode}, {archives} of {count} archives: {last}")
            runs[way].append(
                {
                    "seconds": round(run.seconds, 2),
                    "cpu_seconds": round(run.cpu_seconds, 2),
                    "peak_mib": round(run.peak_bytes / 2**20, 1),
                }
            )
    ways = {}
    for way, samples in runs.items():
        median = {key: statistics.median(sample[key] for sample in samples) for key in samples[0]}
        ways[way] = {"median": median, "runs": samples}
    return {
        "checkpoints": count,
        "checkpoint_mb": round(checkpoints[0].stat().st_size / 1e6, 2),
        "rounds": rounds,
        "machine": describe_machine(),
        "load_average_1min": {"before": load_before, "after": load_average()},
        "ways": ways,
    }


def table(results: dict[str, Any]) -> str:
    ways = results["ways"]
    lines = [
        f"| {results['checkpoints']} checkpoints, median of {results['rounds']} | wall | CPU | peak memory "
        "(tree) | wall / plain | CPU / plain |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for way, found in ways.items():
        median = found["median"]
        threads = way.partition(",")[2]
        plain = ways["plain script" + ("," + threads if threads else "")]["median"]
        wall, cpu = median["seconds"], median["cpu_seconds"]
        lines.append(
            f"| {way} | {wall:.1f} s | {cpu:.1f} s | {median['peak_mib']:,.0f} MiB "
            f"| {wall / plain['seconds']:.2f} | {cpu / plain['cpu_seconds']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.build_workers", description=__doc__)
    parser.add_argument("--checkpoints", type=int, default=CHECKPOINTS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="build-workers-") as scratch:
        results = measure(args.checkpoints, args.rounds, Path(scratch))
    write_figures(results, args.out, table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Growth with the catalog, the lock: `triton-mme lock` once, then `lock --check` on unchanged files (the
stat cache), then `lock --check --rehash` (every checkpoint hashed again).

    .venv/bin/python -m benchmarks.growth_lock [--checkpoints 10 100 1000] [--scratch DIR] [--out FILE]

N SqueezeNet 1.1 state dicts (2.9 MB each, benchmarks/checkpoints.py) in one `variants: listed` family. Each
command runs in a fresh process; wall time and the process tree's peak memory (benchmarks/process_tree.py).
Writes JSON to stdout (or --out) and a Markdown table to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from benchmarks.checkpoints import write_state_dicts
from benchmarks.process_tree import run_measured
from benchmarks.results import write_figures

SIZES = (10, 100, 1000)
REPO_ROOT = Path(__file__).resolve().parents[1]
FAMILY = {
    "family": "growth",
    "architecture": "torchvision:squeezenet1_1",
    "formats": ["onnx"],
    "max_batch_size": 2,
    "input_shape": [3, 32, 32],
    "source": "checkpoint:checkpoints/{variant}.safetensors",
    "variants": "listed",
}


def folder_bytes(folder: Path) -> int:
    """Bytes under `folder`, a hard-linked file counted once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_size
    return total


def _timed(command: list[str], **popen: Any) -> dict[str, float]:
    run = run_measured(command, **popen)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {run.returncode}: {run.stderr.strip()[-400:]}")
    return {"seconds": round(run.seconds, 2), "peak_mib": round(run.peak_bytes / 2**20, 1)}


def measure(sizes: tuple[int, ...], scratch: Path) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": {}}
    pool = scratch / "pool"
    write_state_dicts(pool, max(sizes))
    names = sorted(p.name for p in pool.iterdir())
    cli = [sys.executable, "-m", "triton_mme"]
    for count in sizes:
        project = scratch / f"n{count}"
        (project / "checkpoints").mkdir(parents=True, exist_ok=True)
        for name in names[:count]:
            target = project / "checkpoints" / name
            if not target.exists():
                target.write_bytes((pool / name).read_bytes())  # own files: the cache keys on inodes
                os.utime(target, ns=(0, (pool / name).stat().st_mtime_ns - 3600 * 10**9))
        catalog = project / "models.yaml"
        catalog.write_text(yaml.safe_dump({"models": [FAMILY]}))
        lock = ["lock", "--catalog", str(catalog)]
        row = {
            "lock": _timed([*cli, *lock]),
            "check_unchanged": _timed([*cli, *lock, "--check"]),
            "check_rehash": _timed([*cli, *lock, "--check", "--rehash"]),
            "checkpoints_mb": round(folder_bytes(project / "checkpoints") / 1e6, 1),
        }
        results["sizes"][str(count)] = row
    return results


def table(results: dict[str, Any]) -> str:
    lines = [
        "| checkpoints | size | `lock` | `lock --check` (unchanged) | `lock --check --rehash` |",
        "|---:|---:|---:|---:|---:|",
    ]
    for count, row in results["sizes"].items():
        cells = [
            f"{row[key]['seconds']} s, {row[key]['peak_mib']} MiB"
            for key in ("lock", "check_unchanged", "check_rehash")
        ]
        lines.append(f"| {int(count):,} | {row['checkpoints_mb']:,} MB | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.growth_lock", description=__doc__)
    parser.add_argument("--checkpoints", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--scratch", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="growth-lock-") as temporary:
        results = measure(tuple(args.checkpoints), args.scratch or Path(temporary))
    write_figures(results, args.out, table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

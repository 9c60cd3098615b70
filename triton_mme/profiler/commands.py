"""`triton-mme profile`: measure every built archive on this machine's GPU."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from triton_mme.cli import positive_int
from triton_mme.core.locations import BUILD_DIR, PERFORMANCE_FILE_NAME


def register(subparsers: Any) -> None:
    profile = subparsers.add_parser(
        "profile",
        help="measure every built archive on this GPU (load time, latency, throughput, memory)",
        description="Load every archive named in <from>/manifest.json on this machine's GPU and write "
        "its load time, latency p50/p99 and throughput per batch size and GPU memory to a JSON file.",
    )
    profile.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=BUILD_DIR,
        metavar="DIR",
        help="build output directory with the archives and manifest.json (default: %(default)s)",
    )
    profile.add_argument("--out", type=Path, help=f"figures file (default: <from>/{PERFORMANCE_FILE_NAME})")
    profile.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default="cuda",
        help="where to run; cpu is for trials only (default: %(default)s)",
    )
    profile.add_argument("--iterations", type=positive_int, default=50, help="timed runs per batch size")
    profile.add_argument("--warmup", type=positive_int, default=5, help="untimed runs before timing")
    profile.set_defaults(handler=_profile)


def _profile(args: argparse.Namespace) -> int:
    from triton_mme.core.files import write_atomically
    from triton_mme.profiler.profile import profile_build

    out: Path = args.out or args.source / PERFORMANCE_FILE_NAME
    figures = profile_build(args.source, device=args.device, warmup=args.warmup, iterations=args.iterations)
    write_atomically(out, json.dumps(figures, indent=2, sort_keys=True) + "\n")
    for archive in figures["archives"]:
        if "skipped" in archive:
            print(f"skipped  {archive['target_model']}: {archive['skipped']}")
        else:
            first, last = archive["batches"][0], archive["batches"][-1]
            print(
                f"measured {archive['target_model']}: load {archive['load_time']['value']:.0f} ms, "
                f"p50 {first['latency_p50']['value']:.2f} ms at batch {first['batch_size']}, "
                f"{last['throughput']['value']:.0f} inferences/s at batch {last['batch_size']}"
            )
    print(f"figures  {out}")
    return 0

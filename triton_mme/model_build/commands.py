"""`triton-mme build`, `verify` and `lock`: make verified archives from the catalog, re-check archives, pin
the catalog's checkpoints."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from triton_mme.arguments import add_allow_field, non_negative_int, number_in, positive_int
from triton_mme.core.formats import Format, Weights
from triton_mme.core.locations import BUILD_DIR, MANIFEST_FILE_NAME
from triton_mme.core.platform import PLATFORM
from triton_mme.core.runner_environment import TRITON_TAG_ENV
from triton_mme.core.wording import plural
from triton_mme.model_build.sandbox import DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_TIME_LIMIT_S

MAX_BUILD_WORKERS = 64


def _add_catalog(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--catalog", type=Path, default=Path("models.yaml"), help="model catalog (default: %(default)s)"
    )


def register(subparsers: Any) -> None:
    build = subparsers.add_parser(
        "build",
        help="export, verify and package every (model, format) of the catalog",
        description="Build one <name>-<format>-<content hash>.tar.gz per (model, format) and then "
        "manifest.json. Each export is checked against PyTorch at batch 1 and max_batch_size before it "
        "is packaged; a failed check leaves no archive. Unchanged entries are reused from <out>/.cache.",
    )
    _add_catalog(build)
    build.add_argument("--out", type=Path, default=BUILD_DIR, help="output directory (default: %(default)s)")
    build.add_argument("--only", metavar="NAME", help="build only the catalog model with this name")
    build.add_argument(
        "--shard",
        type=non_negative_int,
        metavar="INDEX",
        help="build only the models of this shard of --shard-file (one runner of a fanned-out build)",
    )
    build.add_argument(
        "--shard-file",
        type=Path,
        metavar="FILE",
        help="the shards' model names, as synthesis writes them (shards.json beside the catalog)",
    )
    build.add_argument(
        "--weights",
        choices=[Weights.PRETRAINED.value, Weights.RANDOM.value],
        help="override the weights of every torchvision and huggingface entry; 'random' builds offline "
        "from a fixed seed (an entry with its own checkpoint always builds from it)",
    )
    build.add_argument(
        "--skip-format",
        action="append",
        default=[],
        choices=[f.value for f in Format],
        help="do not build this format (repeatable); e.g. tensorrt on a machine without GPU or TensorRT",
    )
    build.add_argument(
        "--triton-tag",
        default=os.environ.get(TRITON_TAG_ENV) or PLATFORM.images.default_tag.value,
        help=f"serving Triton image tag the TensorRT plans must match (default: ${TRITON_TAG_ENV}, "
        "else the project's default tag; now %(default)s)",
    )
    build.add_argument(
        "--no-progress", action="store_true", help="no progress bars (one line per archive remains)"
    )
    build.add_argument(
        "--workers",
        type=lambda text: int(
            number_in(1, MAX_BUILD_WORKERS, f"a whole number from 1 to {MAX_BUILD_WORKERS}")(text)
        ),
        default=1,
        help="build this many models at once, each in its own process; memory is about workers x the largest "
        "model's build peak (default: %(default)s)",
    )
    build.set_defaults(handler=_build)

    lock = subparsers.add_parser(
        "lock",
        help="pin every checkpoint of the catalog into its lock file (models.yaml -> models.lock.yaml)",
        description="List the `variants: listed` families and record each checkpoint's sha256, size and "
        "parameter count in the lock file beside the catalog; commit it. S3 checkpoints are read with your "
        "AWS credentials.",
    )
    _add_catalog(lock)
    lock.add_argument(
        "--check",
        action="store_true",
        help="leave the lock file as it is; exit 1 when it is not up to date",
    )
    lock.add_argument(
        "--rehash",
        action="store_true",
        help="hash every local checkpoint, also those whose files kept their size and modification time "
        "since the last lock (build/lock-stat-cache.json beside the catalog)",
    )
    lock.set_defaults(handler=_lock)

    verify = subparsers.add_parser(
        "verify",
        help="re-check built archives (layout, config.pbtxt, a real run for ONNX and TorchScript)",
        description="Check each archive's layout and config.pbtxt against Triton's schema and run ONNX and "
        "TorchScript models at batch 1 and max_batch_size, comparing outputs with the config.",
    )
    verify.add_argument("archives", nargs="+", type=Path, metavar="ARCHIVE", help=".tar.gz archive to check")
    add_allow_field(verify)
    verify.add_argument(
        "--verify-seconds",
        type=positive_int,
        default=DEFAULT_TIME_LIMIT_S,
        help="stop a model's check past this many seconds (default: %(default)s)",
    )
    verify.add_argument(
        "--verify-memory-mib",
        type=positive_int,
        default=DEFAULT_MEMORY_LIMIT_BYTES // 1024**2,
        help="address space the model's check may use (default: %(default)s)",
    )
    verify.set_defaults(handler=_verify)

    gpu_check = subparsers.add_parser(
        "gpu-check",
        help="check that CUDA works here before a GPU build (the build runner runs it first)",
        description="Run one kernel on GPU 0 and print the GPU, the NVIDIA driver and PyTorch's CUDA; "
        "stop with one line when CUDA is unusable.",
    )
    gpu_check.set_defaults(handler=_gpu_check)


def _build(args: argparse.Namespace) -> int:
    from triton_mme.catalog import load_catalog
    from triton_mme.catalog.shards import catalog_shard
    from triton_mme.model_build.pipeline import build_catalog
    from triton_mme.model_build.request_rows import request_row_notes

    catalog = catalog_shard(load_catalog(args.catalog), args.shard_file, args.shard)
    for note in request_row_notes(catalog, only=args.only):
        print(note)
    manifest = build_catalog(
        catalog,
        args.out,
        only=args.only,
        weights_override=Weights(args.weights) if args.weights else None,
        skip_formats=[Format(f) for f in args.skip_format],
        triton_tag=args.triton_tag,
        progress=not args.no_progress,
        workers=args.workers,
    )
    archives = plural(len(manifest.archives), "archive")
    print(f"{archives} in {args.out}; manifest: {Path(args.out) / MANIFEST_FILE_NAME}")
    return 0


def _lock(args: argparse.Namespace) -> int:
    from triton_mme.model_build.lock import write_lock

    result = write_lock(args.catalog, check_only=args.check, rehash=args.rehash)
    count = plural(len(result.lock.checkpoints), "checkpoint")
    if args.check:
        if result.changed:
            print(
                f"error: {result.path} is not up to date ({', '.join(result.changed[:5])}); "
                "run triton-mme lock"
            )
            return 1
        print(f"{result.path}: up to date ({count})")
        return 0
    print(f"{result.path}: {count} pinned, {len(result.changed)} changed")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from triton_mme.model_build.sandbox import SandboxLimits
    from triton_mme.model_build.verify import verify_archive

    limits = SandboxLimits(memory_bytes=args.verify_memory_mib * 1024**2, time_s=args.verify_seconds)
    for path in args.archives:
        report = verify_archive(path, allow_fields=frozenset(args.allow_field), limits=limits)
        line = f"{Path(path).name}: OK ({', '.join(report.checks)})"
        if report.not_run:
            line += f"; not run: {'; '.join(report.not_run)}"
        print(line)
    return 0


def _gpu_check(args: argparse.Namespace) -> int:
    from triton_mme.model_build.gpu_check import check_cuda

    print(check_cuda().line())
    return 0

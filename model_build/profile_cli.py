"""The `profile` and `publish-performance` commands: measure a build on this GPU, publish the figures.

`register(subparsers)` adds them to the `python -m model_build` command line; each handler is set as
the sub-parser's `handler` default, takes the parsed arguments and returns an exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from model_build.manifest import MANIFEST_FILE_NAME
from model_build.upload import DEFAULT_MANIFEST_PREFIX, normalise_prefix

PERFORMANCE_FILE_NAME = "performance.json"


def register(subparsers: Any) -> None:
    """Add `profile` and `publish-performance` to an argparse sub-parsers action."""
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
        default=Path("build/models"),
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
    profile.add_argument("--iterations", type=_positive, default=50, help="timed runs per batch size")
    profile.add_argument("--warmup", type=_positive, default=5, help="untimed runs before timing")
    profile.set_defaults(handler=_profile)

    publish = subparsers.add_parser(
        "publish-performance",
        help="publish <from>/performance.json beside the manifest it measured",
        description="Upload the figures as <manifest-prefix>/<manifest sha256>.performance.json and "
        f"<manifest-prefix>/{PERFORMANCE_FILE_NAME}; refused when they measured another manifest.",
    )
    publish.add_argument("--from", dest="source", type=Path, default=Path("build/models"), metavar="DIR")
    publish.add_argument("--bucket", required=True, help="the model store bucket")
    publish.add_argument(
        "--manifest-prefix",
        default=DEFAULT_MANIFEST_PREFIX,
        help="key prefix of the published manifest (default: %(default)s)",
    )
    publish.set_defaults(handler=_publish)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.replace(temporary, path)


def _profile(args: argparse.Namespace) -> int:
    from model_build.archive import ArchiveError
    from model_build.profile import ProfileError, profile_build

    out: Path = args.out or args.source / PERFORMANCE_FILE_NAME
    try:
        figures = profile_build(
            args.source, device=args.device, warmup=args.warmup, iterations=args.iterations
        )
    except (ProfileError, ArchiveError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    _write_atomically(out, json.dumps(figures, indent=2, sort_keys=True) + "\n")
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


def _publish(args: argparse.Namespace) -> int:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from model_build.manifest import Manifest
    from model_build.profile import manifest_digest

    prefix = normalise_prefix(args.manifest_prefix)
    figures_path: Path = args.source / PERFORMANCE_FILE_NAME
    try:
        body = figures_path.read_bytes()
        measured = json.loads(body)["manifest_sha256"]
        digest = manifest_digest(Manifest.read(args.source / MANIFEST_FILE_NAME))
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"error: {figures_path}: cannot read the figures or their manifest ({error})", file=sys.stderr)
        return 1
    if measured != digest:
        print(
            f"error: {figures_path} measured manifest {measured}, not the built one ({digest}); "
            "run profile again",
            file=sys.stderr,
        )
        return 1
    s3 = boto3.client("s3")
    try:
        for key in (f"{prefix}{digest}.{PERFORMANCE_FILE_NAME}", f"{prefix}{PERFORMANCE_FILE_NAME}"):
            s3.put_object(Bucket=args.bucket, Key=key, Body=body, ContentType="application/json")
            print(f"figures  s3://{args.bucket}/{key}")
    except ClientError as error:
        details = error.response.get("Error", {})
        print(f"error: s3://{args.bucket}: {details.get('Code')}: {details.get('Message')}", file=sys.stderr)
        return 1
    except BotoCoreError as error:
        print(f"error: s3://{args.bucket}: {error}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run these commands on their own (`python -m model_build.profile_cli ...`)."""
    parser = argparse.ArgumentParser(prog="python -m model_build.profile_cli", description=__doc__)
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())

"""Growth at 10,000 models, the parts that need no model build: what one application pays to resolve a model.

    .venv/bin/python -m benchmarks.growth_client [--models 100 1000 10000] [--out FILE]

A moto S3 server runs in its own process (so the client's process holds only the client); the store's
`publish_index` writes the index of a synthetic manifest of N archives and the pointer is replaced the way the
promotion does (sha256 in its metadata). In a fresh child process per size, after importing the client and
creating its S3 client: the first `resolve_target(ManifestSource, model=...)` (wall time, and the peak
resident memory above what the process held after the import), the median of 1,000 later resolves, and, for
comparison, the same resolve through the whole manifest (`ManifestSource.manifest()` and `Manifest.find`,
the client's path before the index). Then the command line's `invoke --dry-run` of one model in a fresh
process, by `--model` and by `--target-model` against the store, and by `--model` against the same manifest
as a local file (read whole: a build folder has no index): wall time and peak memory of the whole process.
Writes JSON to stdout (or --out) and a Markdown table to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.machine import load_average
from benchmarks.results import write_figures

BUCKET = "growth-models"
LIVE_KEY = "manifests/manifest.json"
REPO_ROOT = Path(__file__).resolve().parents[1]
SIZES = (100, 1000, 10000)
LATER_RESOLVES = 1000


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def child(endpoint: str, model: str, whole: bool) -> dict[str, Any]:
    """Runs in a fresh process: import, then resolve once and 1,000 times more."""
    import boto3

    from triton_mme.client.invoke import resolve_target
    from triton_mme.client.manifest_source import ManifestSource

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    source = ManifestSource(f"s3://{BUCKET}/{LIVE_KEY}", s3=s3)
    after_import = _status_kib("VmRSS")
    started = time.perf_counter()
    record = source.manifest().find(model) if whole else resolve_target(source, model=model).record
    first_ms = (time.perf_counter() - started) * 1e3
    peak = _status_kib("VmHWM")
    assert record is not None and record.name == model
    later = []
    for _ in range(LATER_RESOLVES if not whole else 3):
        started = time.perf_counter()
        if whole:
            source.manifest().find(model)
        else:
            resolve_target(source, model=model)
        later.append((time.perf_counter() - started) * 1e3)
    return {
        "first_ms": round(first_ms, 1),
        "above_import_mib": round((peak - after_import) / 1024, 1),
        "later_ms": round(statistics.median(later), 4),
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _publish(s3: Any, count: int) -> bytes:
    """The manifest of `count` synthetic archives, published with its index as the live manifest."""
    from benchmarks.capacity_inputs import synthetic_manifest
    from triton_mme.store.location import ModelStoreClient
    from triton_mme.store.publish import publish_index

    manifest = synthetic_manifest(count)
    publish_index(ModelStoreClient(s3, BUCKET), manifest)
    body = manifest.to_json().encode()
    digest = hashlib.sha256(body).hexdigest()
    s3.put_object(Bucket=BUCKET, Key=LIVE_KEY, Body=body, Metadata={"sha256": digest})
    return body


def invoke_dry_runs(
    manifest_body: bytes, model: str, environment: dict[str, str], scratch: Path
) -> dict[str, Any]:
    """`triton-mme invoke --dry-run` of `model` in a fresh process each way: wall time, peak memory."""
    import numpy as np

    from benchmarks.process_tree import run_measured
    from triton_mme.core.manifest import Manifest

    target_model = Manifest.from_json(manifest_body).find(model).target_model
    local = scratch / "manifest.json"
    local.write_bytes(manifest_body)
    batch = scratch / "input.npy"
    np.save(batch, np.zeros((1, 3, 8, 8), dtype=np.float32))  # the synthetic records' input
    ways = {
        "model": [f"s3://{BUCKET}/{LIVE_KEY}", "--model", model],
        "target_model": [f"s3://{BUCKET}/{LIVE_KEY}", "--target-model", target_model],
        "model_local_manifest": [str(local), "--model", model],
    }
    found: dict[str, Any] = {}
    for way, (manifest, *chosen) in ways.items():
        command = [sys.executable, "-m", "triton_mme", "invoke", "--manifest", manifest, *chosen,
                   "--npy", str(batch), "--dry-run", str(scratch / "request")]  # fmt: skip
        run = run_measured(command, env=environment, cwd=REPO_ROOT)
        if run.returncode != 0:
            raise RuntimeError(
                f"invoke --dry-run ({way}): exit {run.returncode}: {run.stderr.strip()[-400:]}"
            )
        found[way] = {
            "seconds": round(run.seconds, 2),
            "cpu_seconds": round(run.cpu_seconds, 2),
            "peak_mib": round(run.peak_bytes / 2**20, 1),
        }
    return found


def measure(sizes: tuple[int, ...], scratch: Path) -> dict[str, Any]:
    import boto3

    port = _free_port()
    environment = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "benchmark",
        "AWS_SECRET_ACCESS_KEY": "benchmark",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    os.environ.update({k: v for k, v in environment.items() if k.startswith("AWS_")})
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    # The command line's S3 client finds the stand-in through boto3's own setting.
    command_environment = {**environment, "AWS_ENDPOINT_URL_S3": endpoint}
    results: dict[str, Any] = {"later_resolves": LATER_RESOLVES, "sizes": {}}
    try:
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        for _ in range(100):
            try:
                s3.create_bucket(Bucket=BUCKET)
                break
            except Exception:
                time.sleep(0.1)
        for count in sizes:
            manifest_body = _publish(s3, count)
            model = f"m{count // 2:04d}"
            row: dict[str, Any] = {"manifest_kb": round(len(manifest_body) / 1e3, 1)}
            for way, whole in (("index", False), ("whole_manifest", True)):
                answer = subprocess.run(
                    [sys.executable, "-m", "benchmarks.growth_client", "--child", endpoint, model]
                    + (["--whole"] if whole else []),
                    env=environment,
                    cwd=REPO_ROOT,
                    check=True,
                    capture_output=True,
                    text=True,
                )
                row[way] = json.loads(answer.stdout)
            row["invoke_dry_run"] = invoke_dry_runs(manifest_body, model, command_environment, scratch)
            results["sizes"][str(count)] = row
    finally:
        server.terminate()
        server.wait()
    return results


def table(results: dict[str, Any]) -> str:
    lines = [
        "| models | manifest | first resolve (index) | above import | later resolve | first resolve (whole "
        "manifest) | above import |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for count, row in results["sizes"].items():
        index, whole = row["index"], row["whole_manifest"]
        lines.append(
            f"| {int(count):,} | {row['manifest_kb']:,} KB | {index['first_ms']} ms | "
            f"{index['above_import_mib']} MiB | {index['later_ms']} ms | {whole['first_ms']} ms | "
            f"{whole['above_import_mib']} MiB |"
        )
    lines += [
        "",
        "| models | `invoke --dry-run --model` | `--target-model` | `--model`, local manifest (read whole) |",
        "|---:|---:|---:|---:|",
    ]
    for count, row in results["sizes"].items():
        runs = row["invoke_dry_run"]
        cells = [
            f"{runs[way]['seconds']} s (CPU {runs[way]['cpu_seconds']} s), {runs[way]['peak_mib']} MiB"
            for way in runs
        ]
        lines.append(f"| {int(count):,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.growth_client", description=__doc__)
    parser.add_argument("--models", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", nargs=2, metavar=("ENDPOINT", "MODEL"), help=argparse.SUPPRESS)
    parser.add_argument("--whole", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        endpoint, model = args.child
        print(json.dumps(child(endpoint, model, whole=args.whole)))
        return 0
    with tempfile.TemporaryDirectory(prefix="growth-client-") as scratch:
        load_before = load_average()
        results = measure(tuple(args.models), Path(scratch))
        results["load_average_1min"] = {"before": load_before, "after": load_average()}
    write_figures(results, args.out, table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""15. Growth with the catalog: how each of the project's costs grows from 10 to 100 to 1,000 entries.

One family of tiny fine-tunes of one architecture (SqueezeNet 1.1 state dicts with 10 classes, 2.9 MB each,
benchmarks/checkpoints.py), generated once; each size's catalog is one `variants: listed` family over the
first N of them (hard links, so the disk holds one copy). Per size, in this order:

1. `triton-mme lock` (it hashes every checkpoint), in a fresh process;
2. synthesis of the app (`python app.py` as `cdk synth` runs it, CDK's context from cdk.json) with the family
   in S3 (a lock file made here from the local pins: nothing is copied into the cloud assembly), and, at the
   two smaller sizes, with the family in a local folder (the build runner's source ships the checkpoints);
   wall time, the process tree's peak memory, template and cloud-assembly sizes; from the same template the
   dashboard body and the Contributor Insights rules (what the observability constructs make);
3. `triton-mme plan` over N archives of the built size, Zipf traffic (benchmark 11's day);
4. `triton-mme build --workers 2` (ONNX, input 3x32x32, max batch 2) of the local catalog, the largest size
   last and under a time limit (stopped there, the archives it finished are counted); then `triton-mme
   upload` of that build to the in-process S3 mock (moto), and the client: the manifest's size, the time to
   read it, to resolve one model and encode its request, and to invoke it against a loopback stand-in for
   SageMaker (benchmarks/invoke_stub.py).

Each figure's growth is the least-squares slope of log(cost) against log(N) (benchmarks/growth_fit.py).
The whole benchmark should run under `nice -n 19` on a shared machine; the builds are also niced.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from benchmarks.capacity_inputs import synthetic_manifest, write_manifest, write_traffic
from benchmarks.checkpoints import variant_names, write_state_dicts
from benchmarks.client_invoke import child_environment, measure_command
from benchmarks.context import REPO_ROOT, RunContext
from benchmarks.growth_fit import growth_word, loglog_slope
from benchmarks.process_tree import TreeRun, run_measured
from benchmarks.results import Section
from triton_mme.core.errors import first_line

NAME = "growth"
TITLE = "15. Growth with the catalog: 10, 100 and 1,000 own checkpoints"
SIZES = (10, 100, 1000)
QUICK_SIZES = (2, 4, 8)
# Synthesis with local checkpoints copies them all into the build runner's source asset: the two smaller
# sizes show that cost (1,000 would put 2.9 GB into cdk.out).
LOCAL_SYNTH_SIZES = 2
WORKERS = 2
# The largest build is stopped after this long; its throughput is then that of the archives it finished.
LARGEST_BUILD_LIMIT_S = 35 * 60
NICE = ("nice", "-n", "19")
FAMILY = "growth"
BUCKET = "growth-checkpoints"
ENTRY: dict[str, Any] = {
    "family": FAMILY,
    "architecture": "torchvision:squeezenet1_1",
    "variants": "listed",
    "formats": ["onnx"],
    "max_batch_size": 2,
    "input_shape": [3, 32, 32],
}
LOCAL_SOURCE = "checkpoint:checkpoints/{variant}.safetensors"
S3_SOURCE = f"checkpoint:s3://{BUCKET}/{FAMILY}/{{variant}}.safetensors"
CLIENT_REPETITIONS = 20
SYNTH_RUNNERS = 8
# serve-local under Zipf traffic (docs/traffic-local.yaml) with a model budget far below N, a bounded test.
SERVE_BUDGET = 8
SERVE_READY_LIMIT_S = 180
LOADTEST_REQUESTS = 60
LOADTEST_LIMIT_S = 300

# What is charted and fitted: figure prefix -> (label, unit). Each is recorded as `<prefix>.<N>`.
METRICS: dict[str, tuple[str, str]] = {
    "lock": ("triton-mme lock (hashes every checkpoint)", "s"),
    "lock_peak": ("triton-mme lock, peak memory", "MiB"),
    "synth_s3": ("synthesis, family in S3", "s"),
    "synth_s3_peak": ("synthesis, family in S3, peak memory (tree)", "MiB"),
    "template_s3": ("stack template, family in S3", "KB"),
    "assembly_s3": ("cloud assembly, family in S3", "MB"),
    "synth_local": ("synthesis, family in a local folder", "s"),
    "synth_local_peak": ("synthesis, local family, peak memory (tree)", "MiB"),
    "template_local": ("stack template, local family", "KB"),
    "assembly_local": ("cloud assembly, local family (checkpoints shipped)", "MB"),
    "dashboard": ("dashboard body (in the template)", "KB"),
    "insight_rules": ("Contributor Insights rules", "rules"),
    "plan": ("triton-mme plan", "s"),
    "build": (f"build --workers {WORKERS}, wall time", "s"),
    "build_rate": (f"build --workers {WORKERS}, throughput", "archives/min"),
    "build_peak": ("build, peak memory (whole process tree)", "MiB"),
    "upload": ("upload to the S3 mock", "s"),
    "upload_cpu": ("upload to the S3 mock, CPU time (this process: the upload and moto)", "s"),
    "upload_objects": ("objects in the bucket after upload", "objects"),
    "manifest": ("manifest.json", "KB"),
    "manifest_read": ("client: read the manifest", "ms"),
    "request": ("client: resolve one model and encode its request", "ms"),
    "invoke": ("client: invoke one model (loopback stand-in)", "ms"),
    "serve_ready": (f"serve-local (model budget {SERVE_BUDGET}): start until it answers", "s"),
    "serve_hit": (f"serve-local, Zipf load test: cache-hit rate (budget {SERVE_BUDGET})", "%"),
    "serve_p50": ("serve-local, Zipf load test: p50 latency", "ms"),
    "serve_errors": ("serve-local, Zipf load test: errors", "requests"),
    "acceptance_calls": ("acceptance: archives it calls (--serving-sample default)", "archives"),
}
# Rates are not fitted: their cost is (the build's wall time is). Nor are the load test's outcomes, which
# depend on the traffic's spread over N models, not on a cost of the project's.
RATES = ("build_rate", "serve_hit", "serve_p50", "serve_errors")
# The curves of the chart (costs, not throughput: a flat throughput is a linear cost).
CHARTED = (
    "lock",
    "synth_s3",
    "synth_local",
    "template_s3",
    "assembly_local",
    "dashboard",
    "plan",
    "build",
    "upload",
    "manifest",
    "manifest_read",
    "request",
)


def run(ctx: RunContext, section: Section) -> None:
    sizes = ctx.pick(SIZES, QUICK_SIZES)
    # The app accepts only catalogs inside the project (the build runner gets the project's source).
    parent = REPO_ROOT / "build" / "benchmarks"
    parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="growth-", dir=parent) as folder:
        _run(section, Path(folder), sizes)


def _run(section: Section, folder: Path, sizes: tuple[int, ...]) -> None:
    started = time.perf_counter()
    generated = write_state_dicts(folder / "generated", max(sizes))
    section.settings["Checkpoints"] = (
        f"{max(sizes):,} SqueezeNet 1.1 state dicts, 10 classes, "
        f"{generated[0].stat().st_size / 1e6:.1f} MB each, made in {time.perf_counter() - started:.0f} s"
    )
    section.settings["Synthesis"] = f"buildRunners={SYNTH_RUNNERS} (both stages fanned out)"
    section.settings["Build"] = (
        f"ONNX only, input 3x32x32, max batch 2, --workers {WORKERS}, under nice -n 19"
    )
    catalogs = {size: local_catalog(folder / f"local-{size}", generated[:size]) for size in sizes}
    for size in sizes:
        record(section, "lock", size, *_lock(catalogs[size]))
    for size in sizes:
        s3_catalog = s3_catalog_from(catalogs[size], folder / f"s3-{size}")
        _synthesis(section, "s3", size, s3_catalog, folder / f"s3-{size}-out")
    for size in sizes[:LOCAL_SYNTH_SIZES]:
        _synthesis(section, "local", size, catalogs[size], folder / f"local-{size}-out")
    archive_bytes = generated[0].stat().st_size
    for size in sizes:
        _plan(section, size, folder / f"plan-{size}", archive_bytes)
    for size in sizes:
        limit = LARGEST_BUILD_LIMIT_S if size == max(sizes) else None
        out_dir = folder / f"local-{size}" / "out"
        # A failure at one size is recorded and the next size still runs (the largest takes half an hour).
        try:
            if _build(section, size, catalogs[size], out_dir, limit):
                _upload(section, size, out_dir)
                _client(section, size, out_dir / "manifest.json")
                _serve_local(section, size, out_dir, folder / f"loadtest-{size}.json")
                _acceptance_sample(section, size, out_dir / "manifest.json")
        except Exception as error:
            traceback.print_exc()
            section.notes.append(f"N={size:,}: not measured past the failure: {first_line(error)}")
    _growth(section, sizes)
    _notes(section, sizes)


# --- inputs ---------------------------------------------------------------------------------------------


def local_catalog(project: Path, checkpoints: list[Path]) -> Path:
    """A catalog folder whose one family lists `checkpoints` (hard links to the generated files)."""
    folder = project / "checkpoints"
    folder.mkdir(parents=True)
    for path in checkpoints:
        os.link(path, folder / path.name)
    catalog = project / "models.yaml"
    catalog.write_text(yaml.safe_dump({"models": [{**ENTRY, "source": LOCAL_SOURCE}]}), encoding="utf-8")
    return catalog


def s3_catalog_from(local: Path, project: Path) -> Path:
    """The same family in S3, with a lock file made from the local one's pins (their content is the same)."""
    from triton_mme.catalog.lock import CatalogLock, lock_path, read_lock

    pinned = read_lock(lock_path(local))
    if pinned is None:
        raise RuntimeError(f"{local}: no lock file; `triton-mme lock` must run first")
    pins = {
        name: pin.model_copy(
            update={
                "source": S3_SOURCE.replace("{variant}", name.removeprefix(f"{FAMILY}-")),
                # Not S3's ETag (nothing was uploaded): synthesis does not read it, preflight would.
                "etags": {"": f'"{pin.sha256[:32]}"'},
            }
        )
        for name, pin in pinned.checkpoints.items()
    }
    project.mkdir(parents=True)
    catalog = project / "models.yaml"
    catalog.write_text(yaml.safe_dump({"models": [{**ENTRY, "source": S3_SOURCE}]}), encoding="utf-8")
    lock = CatalogLock(families=pinned.families, checkpoints=pins)
    lock_path(catalog).write_text(lock.to_yaml(), encoding="utf-8")
    return catalog


def record(section: Section, metric: str, size: int, *values: float) -> None:
    """`metric.<size>` (and, when two values are given, `<metric>_peak.<size>` in MiB from bytes)."""
    label, unit = METRICS[metric]
    section.add(f"{metric}.{size}", f"{label}, N={size:,}", values[0], unit)
    if len(values) > 1:
        peak_label, peak_unit = METRICS[f"{metric}_peak"]
        section.add(f"{metric}_peak.{size}", f"{peak_label}, N={size:,}", values[1] / 2**20, peak_unit)


def _checked(run: TreeRun, what: str) -> TreeRun:
    if run.returncode != 0 and not run.stopped:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{what} failed (exit {run.returncode}): {last}")
    return run


# --- 1. lock and synthesis ------------------------------------------------------------------------------


def _lock(catalog: Path) -> tuple[float, float]:
    command = [sys.executable, "-m", "triton_mme", "lock", "--catalog", str(catalog)]
    run = _checked(run_measured(command, cwd=REPO_ROOT), "triton-mme lock")
    return run.seconds, run.peak_bytes


def synth_environment(catalog: Path, out_dir: Path) -> dict[str, str]:
    """What `cdk synth` gives app.py: the merged context (cdk.json, then the catalog), the output folder."""
    from triton_mme_cdk.context import project_context

    # 1,000 of these models need about an hour of one runner: the stack is synthesized fanned out, as such a
    # catalog deploys (the time estimate refuses it on one runner).
    context = project_context([f"modelCatalog={catalog}", f"buildRunners={SYNTH_RUNNERS}"], REPO_ROOT)
    return dict(os.environ, CDK_CONTEXT_JSON=json.dumps(context), CDK_OUTDIR=str(out_dir))


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def dashboard_body_bytes(template: dict[str, Any]) -> int:
    """The dashboard bodies' literal text (their Fn::Join parts that are strings), summed."""
    total = 0
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") != "AWS::CloudWatch::Dashboard":
            continue
        body = resource["Properties"]["DashboardBody"]
        parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
        total += sum(len(part) for part in parts if isinstance(part, str))
    return total


def resource_count(template: dict[str, Any], kind: str) -> int:
    return sum(1 for r in template.get("Resources", {}).values() if r.get("Type") == kind)


def _synthesis(section: Section, where: str, size: int, catalog: Path, out_dir: Path) -> None:
    command = [sys.executable, "app.py"]
    env = synth_environment(catalog, out_dir)
    run = _checked(run_measured(command, cwd=REPO_ROOT, env=env), f"synthesis of {catalog}")
    templates = sorted(out_dir.glob("*.template.json"))
    template_bytes = sum(path.stat().st_size for path in templates)
    record(section, f"synth_{where}", size, run.seconds, run.peak_bytes)
    record(section, f"template_{where}", size, template_bytes / 1e3)
    record(section, f"assembly_{where}", size, folder_bytes(out_dir) / 1e6)
    if where == "s3":
        loaded = [json.loads(path.read_text(encoding="utf-8")) for path in templates]
        record(section, "dashboard", size, sum(dashboard_body_bytes(t) for t in loaded) / 1e3)
        rules = sum(resource_count(t, "AWS::CloudWatch::InsightRule") for t in loaded)
        record(section, "insight_rules", size, rules)


# --- 3. plan --------------------------------------------------------------------------------------------


def _plan(section: Section, size: int, folder: Path, archive_bytes: int) -> None:
    from benchmarks.plan_speed import TRAFFIC

    manifest = write_manifest(folder, synthetic_manifest(size, size_bytes=archive_bytes))
    traffic = write_traffic(folder / "traffic.yaml", TRAFFIC)
    command = [
        sys.executable, "-m", "triton_mme", "plan", "--no-stack", "--traffic", str(traffic),
        "--manifest", str(manifest), "--json", str(folder / "plan.json"),
    ]  # fmt: skip
    report = measure_command(command, child_environment("http://127.0.0.1:9"))
    record(section, "plan", size, report["seconds"])


# --- 4. build, upload, client ---------------------------------------------------------------------------


def _build(section: Section, size: int, catalog: Path, out_dir: Path, limit_s: float | None) -> bool:
    """Build the catalog; True when it finished (the upload and the client then use its output)."""
    command = [
        *NICE, sys.executable, "-m", "triton_mme", "build", "--catalog", str(catalog), "--out", str(out_dir),
        "--workers", str(WORKERS), "--no-progress",
    ]  # fmt: skip
    run = _checked(run_measured(command, cwd=REPO_ROOT, limit_s=limit_s), "triton-mme build")
    # Counted on disk, not from the build's lines (its workers share its stderr): an archive is only
    # there under its final name once written whole.
    archives = len(list(out_dir.glob("*.tar.gz")))
    record(section, "build", size, run.seconds, run.peak_bytes)
    label, unit = METRICS["build_rate"]
    section.add(f"build_rate.{size}", f"{label}, N={size:,}", archives / run.seconds * 60, unit)
    if run.stopped:
        section.notes.append(
            f"The build of {size:,} entries was stopped at its limit ({limit_s:.0f} s) with {archives:,} "
            "archives built: its wall time is the limit and its throughput that of the finished archives; "
            "no manifest, so no upload or client figure at that size."
        )
        return False
    if archives != size:
        raise RuntimeError(f"the build of {size} entries reported {archives} archives")
    return True


@contextmanager
def _mock_s3() -> Iterator[Any]:
    """An in-process S3 (moto) with one bucket; no AWS configuration of this machine is read."""
    from moto import mock_aws

    fake = {
        "AWS_ACCESS_KEY_ID": "benchmark",
        "AWS_SECRET_ACCESS_KEY": "benchmark",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    saved = {key: os.environ.get(key) for key in fake}
    os.environ.update(fake)
    try:
        with mock_aws():
            import boto3

            client = boto3.client("s3", region_name="us-east-1")
            client.create_bucket(Bucket="growth-models")
            yield client
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _upload(section: Section, size: int, out_dir: Path) -> None:
    from triton_mme.cli import main

    with _mock_s3() as s3:
        started, cpu = time.perf_counter(), time.process_time()
        status = main(["upload", "--from", str(out_dir), "--bucket", "growth-models"])
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        if status != 0:
            raise RuntimeError(f"triton-mme upload of {size} archives failed (exit {status})")
        objects = sum(
            page.get("KeyCount", 0)
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket="growth-models")
        )
    record(section, "upload", size, seconds)
    # CPU time tells a cost that grows from a busy machine's share of the cores.
    record(section, "upload_cpu", size, cpu)
    record(section, "upload_objects", size, objects)


def median_ms(action: Callable[[], object], repetitions: int = CLIENT_REPETITIONS) -> float:
    samples = []
    for _ in range(repetitions):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _client(section: Section, size: int, manifest_path: Path) -> None:
    import boto3
    import numpy as np

    from benchmarks.invoke_stub import InvokeStub
    from triton_mme.client.invoke import output_names, resolve_target, send
    from triton_mme.client.manifest_source import ManifestSource
    from triton_mme.client.payloads import encode_request

    source = ManifestSource(str(manifest_path))
    model = f"{FAMILY}-{variant_names(size)[size // 2]}"

    def request() -> Any:
        target = resolve_target(source, model=model, format="onnx")
        assert target.record is not None
        inputs = {spec.name: np.zeros((1, *spec.dims), dtype=np.float32) for spec in target.record.inputs}
        return target, encode_request(inputs, output_names(target), binary=True)

    record(section, "manifest", size, manifest_path.stat().st_size / 1e3)
    record(section, "manifest_read", size, median_ms(source.manifest))
    record(section, "request", size, median_ms(request))
    target, encoded = request()
    with InvokeStub() as stub:
        runtime = boto3.client(
            "sagemaker-runtime",
            region_name="us-east-1",
            endpoint_url=stub.url,
            aws_access_key_id="benchmark",
            aws_secret_access_key="benchmark",
        )
        record(
            section,
            "invoke",
            size,
            median_ms(lambda: send(encoded, target, endpoint="growth", runtime=runtime)),
        )


def _serve_local(section: Section, size: int, out_dir: Path, report: Path) -> None:
    """The build served by serve-local with a model budget far below N, under a bounded Zipf load test."""
    import signal
    import subprocess
    import urllib.request

    from triton_mme.local_triton.server import free_port

    port = free_port()
    command = [sys.executable, "-m", "triton_mme", "serve-local", "--models", str(out_dir),
               "--model-budget", str(SERVE_BUDGET), "--port", str(port)]  # fmt: skip
    started = time.perf_counter()
    server = subprocess.Popen(
        [*NICE, *command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.perf_counter() - started > SERVE_READY_LIMIT_S:
                raise RuntimeError(
                    f"serve-local with {size} archives did not answer within {SERVE_READY_LIMIT_S} s"
                )
            time.sleep(1)
        record(section, "serve_ready", size, time.perf_counter() - started)
        loadtest = [sys.executable, "-m", "triton_mme", "loadtest", "--traffic", str(REPO_ROOT / "docs" /
                    "traffic-local.yaml"), "--manifest", str(out_dir / "manifest.json"), "--local",
                    f"http://127.0.0.1:{port}", "--requests", str(LOADTEST_REQUESTS), "--users", "4",
                    "--out", str(report)]  # fmt: skip
        subprocess.run(loadtest, check=True, timeout=LOADTEST_LIMIT_S, capture_output=True)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    measured = json.loads(report.read_text())["measured"]
    record(section, "serve_hit", size, 100 * measured["cache_hit_rate"])
    record(section, "serve_p50", size, measured["latency_ms"]["p50_ms"])
    record(section, "serve_errors", size, sum(measured["errors"].values()))


def _acceptance_sample(section: Section, size: int, manifest_path: Path) -> None:
    """How many archives an acceptance run calls for this manifest (each call may be a cold load)."""
    from triton_mme.acceptance.serving import sample_archives
    from triton_mme.acceptance.timing import DEFAULT_SERVING_SAMPLE
    from triton_mme.core.manifest import Manifest

    manifest = Manifest.read(manifest_path)
    record(section, "acceptance_calls", size, len(sample_archives(manifest, DEFAULT_SERVING_SAMPLE)))


# --- growth ---------------------------------------------------------------------------------------------


def _growth(section: Section, sizes: tuple[int, ...]) -> None:
    """Per metric measured at two or more sizes: its log-log slope (a figure) and, if charted, a curve."""
    for metric, (label, _) in METRICS.items():
        if metric in RATES:
            continue
        points = [(size, f"{metric}.{size}") for size in sizes if _has(section, f"{metric}.{size}")]
        if len(points) < 2:
            continue
        values = [section.figure(key).value for _, key in points]
        if min(values) <= 0:
            continue
        slope = loglog_slope([n for n, _ in points], values)
        measured = ", ".join(f"{n:,}" for n, _ in points)
        section.add(
            f"slope.{metric}", f"{label}: growth over N={measured} ({growth_word(slope)})", slope, "slope"
        )
        if metric in CHARTED:
            section.curves[f"{label} (slope {slope:.2f})"] = [(float(n), key) for n, key in points]


def _has(section: Section, key: str) -> bool:
    try:
        section.figure(key)
    except KeyError:
        return False
    return True


def _notes(section: Section, sizes: tuple[int, ...]) -> None:
    if sizes != SIZES:
        section.notes.append(f"Quick mode: N = {', '.join(map(str, sizes))} instead of 10, 100 and 1,000.")
    section.notes.append(
        "Growth: the least-squares slope of log(value) against log(N), ~0 constant, ~1 linear, above 1.15 "
        "worse than linear. One run per size (no repetitions): small figures (a second or less) carry "
        "start-up noise, and the machine's load average is recorded with the run."
    )
    section.notes.append(
        "Synthesis is `python app.py` with the context `cdk synth` would pass (cdk.json's, then "
        "modelCatalog), without the Node CLI; peak memory is the process tree's (Python and jsii's Node). "
        "The S3 family's lock file is made from the local pins with placeholder ETags (nothing is uploaded; "
        "synthesis reads no ETag)."
    )
    section.notes.append(
        "Plan: `triton-mme plan --no-stack` over a manifest of N archives of the checkpoints' size, "
        "benchmark 11's traffic (Zipf 1.0, 50 requests/s for a day), in a fresh process. Client: medians of "
        f"{CLIENT_REPETITIONS} calls in this process; the invoke goes through boto3 to "
        "benchmarks/invoke_stub.py (signing, HTTP and decoding real, no model)."
    )

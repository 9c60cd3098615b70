"""One load test from start to finish: read the traffic and the manifest, prepare the requests, drive the
target with Locust, and record the measurement beside what the server itself counted."""

from __future__ import annotations

import datetime as dt
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triton_mme.client.manifest_source import ManifestSource
from triton_mme.core.bounded import load_json
from triton_mme.core.limits import MAX_REPLY_BYTES
from triton_mme.loadtest import runner
from triton_mme.loadtest.cloudwatch import DEFAULT_VARIANT, wait_for_model_cache_hit
from triton_mme.loadtest.live import LiveLine
from triton_mme.loadtest.observe import Recorder
from triton_mme.loadtest.requests import request_plan
from triton_mme.loadtest.targets import LocalTarget, SageMakerTarget, TargetError
from triton_mme.planner.outcome import Configuration, LoadTestReport, ServerCount
from triton_mme.planner.traffic import TrafficFile, workload

LOCAL_COUNTERS_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class LoadTestOptions:
    traffic: TrafficFile
    manifest: str
    users: int
    duration_s: float
    local_url: str | None = None
    endpoint: str | None = None
    component_endpoint: str | None = None  # where archives placed on inference components are called
    region: str | None = None
    instance_type: str | None = None
    instances: int = 1
    max_requests: int | None = None
    rate_per_s: float | None = None  # None: back to back
    warmup_s: float = 0.0
    warmup_requests: int = 0
    timeout_s: float = 70.0
    cold_threshold_ms: float | None = None
    cloudwatch_wait_s: float | None = None  # read ModelCacheHit afterwards, waiting up to this long
    variant: str = DEFAULT_VARIANT
    binary: bool = True
    metrics_out: Path | None = None  # the callers' per-model records (docs/observability.md)


def local_counters(url: str) -> dict[str, Any]:
    """The local endpoint's GET /models: the budget and its cache-hit counters."""
    with urllib.request.urlopen(f"{url.rstrip('/')}/models", timeout=LOCAL_COUNTERS_TIMEOUT_S) as response:
        answer: dict[str, Any] = load_json(
            response.read(MAX_REPLY_BYTES + 1), where=f"{url} GET /models", max_bytes=MAX_REPLY_BYTES
        )
    return answer


def load_test(options: LoadTestOptions, *, cloudwatch: Any = None, live: bool = False) -> LoadTestReport:
    """Drive the target with the traffic; the report holds the measurement in the planner's shape."""
    remote = options.endpoint is not None or options.component_endpoint is not None
    if (options.local_url is None) == (not remote):
        raise TargetError("give either --local URL or --endpoint NAME (and --component-endpoint NAME)")
    manifest = ManifestSource(options.manifest).manifest()
    load = workload(options.traffic, manifest, origin="--traffic")
    plan = request_plan(load, binary=options.binary)
    recorder = Recorder(
        labels=plan.labels,
        target_models=plan.target_models,
        warmup_s=options.warmup_s,
        warmup_requests=options.warmup_requests,
        limit=options.max_requests,
    )
    before: dict[str, Any] = {}
    if options.local_url is not None:
        target: LocalTarget | SageMakerTarget = LocalTarget(options.local_url, plan, options.timeout_s)
        try:
            before = local_counters(options.local_url)
        except (OSError, ValueError) as error:  # unreachable, or not JSON
            raise TargetError(
                f"--local {options.local_url}: the local endpoint does not answer ({error})"
            ) from None
        if not isinstance(before.get("budget"), int):
            raise TargetError(
                f"--local {options.local_url}: GET /models names no model budget (not triton-mme serve-local)"
            )
        configuration = Configuration(
            target="local", model_budget=before["budget"], endpoint=options.local_url
        )
    else:
        cold = None if options.cold_threshold_ms is None else options.cold_threshold_ms / 1000
        target = SageMakerTarget(
            options.endpoint,
            plan,
            options.region,
            options.timeout_s,
            cold,
            component_endpoint=options.component_endpoint,
        )
        configuration = Configuration(
            target="sagemaker",
            instance_type=options.instance_type,
            instances=options.instances,
            endpoint=options.endpoint or options.component_endpoint,
        )
    bounds = runner.Bounds(
        users=options.users,
        duration_s=options.duration_s,
        rate_per_s=options.rate_per_s,
        hard_limit_s=3 * (options.duration_s + options.warmup_s) + 2 * options.timeout_s + 60,
        stop_timeout_s=options.timeout_s,
    )
    wall_start = dt.datetime.now(dt.UTC)
    tick = LiveLine(recorder, options.rate_per_s).tick if live else None
    ended = runner.run(plan, target.session, recorder, bounds, tick)
    measured = recorder.outcome(configuration, ended=ended)
    if options.metrics_out is not None:
        from triton_mme.loadtest.caller_records import write_caller_records

        write_caller_records(
            options.metrics_out, recorder.observations, plan.target_models, endpoint=options.endpoint
        )
    server = None
    if options.local_url is not None:
        after = local_counters(options.local_url)
        hits = after["cacheHits"] - before["cacheHits"]
        misses = after["cacheMisses"] - before["cacheMisses"]
        if hits + misses:
            server = ServerCount(
                source="local endpoint counters (warm-up included)",
                cache_hit_rate=hits / (hits + misses),
                requests=hits + misses,
            )
    elif options.cloudwatch_wait_s is not None and options.endpoint is not None:
        client = cloudwatch or _cloudwatch_client(options.region)
        warmed = dt.timedelta(seconds=(recorder.warmup_done_at or ended) - recorder.started)
        server = wait_for_model_cache_hit(
            client,
            options.endpoint,
            options.variant,
            wall_start + warmed,
            wall_start + dt.timedelta(seconds=ended - recorder.started),
            expected_requests=measured.requests,
            wait_s=options.cloudwatch_wait_s,
        )
    return LoadTestReport(
        traffic=options.traffic,
        manifest=options.manifest,
        users=options.users,
        rate_per_s=options.rate_per_s,
        warmup_s=options.warmup_s,
        warmup_requests=recorder.warmed,
        measured=measured,
        server=server,
    )


def _cloudwatch_client(region: str | None) -> Any:
    import boto3

    return boto3.client("cloudwatch", region_name=region)


def write_report(path: Path, report: LoadTestReport) -> None:
    """The report as JSON, written whole or not at all."""
    from triton_mme.planner.plan_document import write_json

    write_json(path, report)

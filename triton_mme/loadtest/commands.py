"""`triton-mme loadtest`: the traffic file's requests against a SageMaker endpoint or the local Triton,
measured per model in the planner's shape (compare with `triton-mme plan --compare`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from triton_mme.arguments import number_in, positive_int
from triton_mme.core.locations import BUILD_DIR, MANIFEST_FILE_NAME

MAX_USERS = 1000
MAX_DURATION_S = 86_400.0
MAX_REQUESTS = 10_000_000
DEFAULT_VARIANT = "AllTraffic"  # loadtest.cloudwatch.DEFAULT_VARIANT (kept importable without boto3)


def _bounded(low: float, high: float, what: str) -> Callable[[str], float]:
    return number_in(low, high, f"{what} from {low:g} to {high:g}")


def register(subparsers: Any) -> None:
    test = subparsers.add_parser(
        "loadtest",
        help="drive an endpoint (or the local Triton) with a traffic file and measure hits, latency, errors",
        description="Send the traffic file's requests with Locust (headless, bounded users and time) to a "
        "SageMaker multi-model endpoint (InvokeEndpoint, SigV4) or the local Triton, and write per-model "
        "latency, cold hits, 507/4xx/5xx and timeouts and the cache-hit rate as JSON, in the shape of "
        "`triton-mme plan`'s prediction (docs/capacity-planning.md).",
    )
    test.add_argument("--traffic", type=Path, required=True, help="traffic file (YAML or JSON)")
    test.add_argument(
        "--manifest",
        default=str(BUILD_DIR / MANIFEST_FILE_NAME),
        help="build manifest: a path or s3://bucket/key (default %(default)s)",
    )
    test.add_argument(
        "--local",
        metavar="URL",
        help="the local endpoint (serve-local, both routes), e.g. http://127.0.0.1:8080",
    )
    test.add_argument(
        "--endpoint", metavar="NAME", help="the SageMaker multi-model endpoint (stack output EndpointName)"
    )
    test.add_argument(
        "--component-endpoint",
        metavar="NAME",
        help="the SageMaker endpoint of the inference components, for archives the manifest places there "
        "(stack output InferenceComponentEndpointName)",
    )
    test.add_argument("--region", help="the endpoint's region (default: the AWS configuration's)")
    test.add_argument("--instance-type", help="the endpoint's instance type, recorded for `plan --compare`")
    test.add_argument("--instances", type=positive_int, default=1, help="the endpoint's instance count")
    test.add_argument(
        "--users", type=_bounded(1, MAX_USERS, "users"), default=4, help="concurrent Locust users (default 4)"
    )
    test.add_argument(
        "--rate",
        type=_bounded(0, 1e6, "requests per second"),
        help="requests per second, all users together (default: the traffic file's total; 0: back to back)",
    )
    test.add_argument(
        "--duration",
        type=_bounded(1, MAX_DURATION_S, "seconds"),
        default=60.0,
        help="measured seconds after the warm-up (default 60)",
    )
    test.add_argument(
        "--requests",
        type=_bounded(1, MAX_REQUESTS, "requests"),
        help="stop after this many measured requests (default: none, --duration ends the run)",
    )
    test.add_argument(
        "--warmup",
        type=_bounded(0, MAX_DURATION_S, "seconds"),
        default=0.0,
        help="seconds sent, not measured",
    )
    test.add_argument(
        "--warmup-requests",
        type=_bounded(0, MAX_REQUESTS, "requests"),
        default=0,
        help="requests sent, not measured",
    )
    test.add_argument(
        "--timeout",
        type=_bounded(0.1, 3600, "seconds"),
        default=70.0,
        help="per request (default 70: InvokeEndpoint's 60 s and some)",
    )
    test.add_argument(
        "--cold-threshold-ms",
        type=_bounded(1, 3_600_000, "milliseconds"),
        help="SageMaker: count a request this slow (or ModelNotReadyException) as a cache miss",
    )
    test.add_argument(
        "--cloudwatch",
        type=_bounded(0, 3600, "seconds"),
        metavar="WAIT_S",
        help="SageMaker: afterwards read the endpoint's ModelCacheHit metric, waiting up to WAIT_S for it",
    )
    test.add_argument(
        "--variant", default=DEFAULT_VARIANT, help="the endpoint's variant (default %(default)s)"
    )
    test.add_argument(
        "--json", dest="json_payloads", action="store_true", help="send KServe JSON, not binary"
    )
    test.add_argument("--out", type=Path, required=True, metavar="FILE.json", help="where the results go")
    test.add_argument(
        "--metrics-out",
        type=Path,
        metavar="FILE",
        help="append the measured requests as per-TargetModel caller records (embedded metric format)",
    )
    test.set_defaults(handler=_loadtest)


def _loadtest(args: argparse.Namespace) -> int:
    # Locust patches the standard library for gevent when imported: first, before anything opens sockets.
    from triton_mme.loadtest import runner  # noqa: F401
    from triton_mme.loadtest.drive import LoadTestOptions, load_test, write_report
    from triton_mme.loadtest.live import rate_warning
    from triton_mme.loadtest.summary import render_summary
    from triton_mme.planner.traffic import read_traffic

    traffic = read_traffic(args.traffic)
    rate = args.rate
    if rate is None:
        rate = (
            traffic.zipf.total_rate_per_s if traffic.zipf else sum(m.rate_per_s or 0 for m in traffic.models)
        )
    options = LoadTestOptions(
        traffic=traffic,
        manifest=args.manifest,
        users=int(args.users),
        duration_s=args.duration,
        local_url=args.local,
        endpoint=args.endpoint,
        component_endpoint=args.component_endpoint,
        region=args.region,
        instance_type=args.instance_type,
        instances=args.instances,
        max_requests=None if args.requests is None else int(args.requests),
        rate_per_s=rate or None,
        warmup_s=args.warmup,
        warmup_requests=int(args.warmup_requests),
        timeout_s=args.timeout,
        cold_threshold_ms=args.cold_threshold_ms,
        cloudwatch_wait_s=args.cloudwatch,
        variant=args.variant,
        binary=not args.json_payloads,
        metrics_out=args.metrics_out,
    )
    report = load_test(options, live=True)
    write_report(args.out, report)
    print(render_summary(report), end="")
    warning = rate_warning(report.measured, options.rate_per_s)
    if warning:
        print(warning, file=sys.stderr)
    print(f"Results: {args.out}", file=sys.stderr)
    return 0

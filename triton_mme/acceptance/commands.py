"""`triton-mme acceptance`: check a deployed stack's live endpoint, one line per check, and a JSON report."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from triton_mme.acceptance.timing import DEFAULT_SERVING_SAMPLE
from triton_mme.arguments import non_negative_int, number_in

DEFAULT_STACK = "TritonMultiModelEndpoint"
DEFAULT_REPORT = Path("acceptance-report.json")
# CloudWatch publishes SageMaker's metrics a few minutes after the minute they describe.
DEFAULT_METRICS_WAIT_S = 600.0


_seconds = number_in(0, math.inf, "a number of seconds of at least 0")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "acceptance",
        help="prove the deployed endpoint does what its stack promised (needs AWS credentials)",
        description="Check the live endpoint of a deployed stack: it serves every model of the live manifest "
        "with its golden outputs, it is what the template says, its last update followed its strategy, its "
        "metrics arrive and its alarms and scaling are wired, and the live manifest is the deployed build. "
        "Read-only except for InvokeEndpoint. Prints one line per check, writes a JSON report and exits 1 "
        "when any check fails (docs/acceptance.md).",
    )
    parser.add_argument(
        "--stack", default=DEFAULT_STACK, help=f"the deployed stack (default: {DEFAULT_STACK})"
    )
    parser.add_argument("--region", help="AWS region (default: the AWS configuration's)")
    parser.add_argument(
        "--report",
        type=Path,
        default=DEFAULT_REPORT,
        help=f"where the JSON report goes (default: {DEFAULT_REPORT})",
    )
    parser.add_argument(
        "--metrics-wait-s",
        type=_seconds,
        default=DEFAULT_METRICS_WAIT_S,
        metavar="SECONDS",
        help="how long to wait for the endpoint's metrics to arrive after the invocations "
        f"(default: {DEFAULT_METRICS_WAIT_S:.0f})",
    )
    parser.add_argument(
        "--serving-sample",
        type=non_negative_int,
        default=DEFAULT_SERVING_SAMPLE,
        metavar="N",
        help="call at most N archives of the live manifest, each format and tensor layout at least once; 0 "
        "calls every one (default: %(default)s)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import boto3

    from triton_mme.acceptance.runner import AcceptanceClients, run_acceptance
    from triton_mme.core.files import write_atomically

    session = boto3.Session(region_name=args.region)
    report = run_acceptance(
        args.stack,
        AcceptanceClients.from_session(session),
        region=session.region_name,
        metrics_wait_s=args.metrics_wait_s,
        progress=lambda check: print(check.line(), flush=True),
        serving_sample=args.serving_sample,
    )
    write_atomically(args.report, report.to_json())
    print(report.summary())
    print(f"report: {args.report}")
    if report.undecided:
        print(f"warning: {len(report.undecided)} acceptance check(s) cannot tell", file=sys.stderr)
    if not report.passed:
        print(f"error: {len(report.failures)} acceptance check(s) failed", file=sys.stderr)
    return 0 if report.passed else 1

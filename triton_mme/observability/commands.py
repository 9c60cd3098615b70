"""`triton-mme models`: one line per TargetModel, from the stack's CloudWatch figures or a local log."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from triton_mme.core.errors import UserError
from triton_mme.core.locations import BUILD_DIR, local_triton_log

SINCE = re.compile(r"^(?P<amount>\d+)(?P<unit>[mhd])$")
UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400}
MAX_SINCE_S = 15 * 86400  # Contributor Insights keeps its reports for 15 days


def since_seconds(text: str) -> int:
    """An argparse type: 30m, 1h, 7d (at most 15 days)."""
    found = SINCE.match(text.strip())
    if found is None or not 0 < int(found["amount"]) * UNIT_SECONDS[found["unit"]] <= MAX_SINCE_S:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; e.g. 30m, 1h or 7d, at most 15d")
    return int(found["amount"]) * UNIT_SECONDS[found["unit"]]


def register(subparsers: Any) -> None:
    models = subparsers.add_parser(
        "models",
        help="one line per TargetModel: requests, cold loads, evictions, failed loads, last load, p50/p99",
        description="Per-model figures of the multi-model endpoint: from CloudWatch (the stack's Contributor "
        "Insights rules and the callers' metrics) or from a local Triton's log (serve-local).",
    )
    where = models.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", metavar="NAME", help="the deployed stack (reads CloudWatch)")
    where.add_argument(
        "--local",
        nargs="?",
        const=BUILD_DIR,
        type=Path,
        metavar="FOLDER_OR_LOG",
        help="the folder serve-local served (its Triton's log in it) or a log file "
        f"(default: the log in {BUILD_DIR})",
    )
    models.add_argument(
        "--since", type=since_seconds, default=3600, help="window, e.g. 30m, 1h, 7d (default 1h)"
    )
    models.add_argument(
        "--records",
        type=Path,
        metavar="FILE",
        help="--local: callers' records (invoke/loadtest --metrics-out)",
    )
    models.add_argument("--region", help="--stack: the stack's region (default: the AWS configuration's)")
    models.set_defaults(handler=_models)


def _models(args: argparse.Namespace, cloudformation: Any = None, cloudwatch: Any = None) -> int:
    from triton_mme.observability.figures import render_table

    if args.local is not None:
        from triton_mme.observability.local import local_figures

        log = local_triton_log(args.local)
        rows, malformed = local_figures(log, args.records)
        if malformed:
            print(f"warning: {malformed} malformed Triton line(s) in {log}")
    else:
        if args.records is not None:
            raise UserError("--records goes with --local; a stack's callers publish to CloudWatch")
        from triton_mme.observability.cloudwatch import stack_figures

        rows = stack_figures(
            args.stack, args.since, region=args.region, cloudformation=cloudformation, cloudwatch=cloudwatch
        )
    if not rows:
        print("no model events in the window")
        return 0
    for line in render_table(rows):
        print(line)
    return 0

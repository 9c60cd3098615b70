"""`triton-mme plan`: how many models stay loaded, how often they start cold and what it costs, per GPU
multi-model instance type; `plan --compare LOADTEST.json` sets the prediction beside a load test."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from triton_mme.arguments import positive_int
from triton_mme.core.errors import quoted
from triton_mme.core.locations import BUILD_DIR, MANIFEST_FILE_NAME
from triton_mme.core.numbers import finite_number
from triton_mme.core.platform import PLATFORM
from triton_mme.planner.defaults import DEFAULT_MAX_INSTANCES, DEFAULT_SIMULATED_REQUESTS
from triton_mme.sizing.targets import DEFAULT_GPU_UTILIZATION_TARGET

if TYPE_CHECKING:
    from triton_mme.planner.stack import StackReader

DEFAULT_REGION = "us-east-1"


def _number_in(allowed: str, accepts: Any) -> Any:
    """An argparse type: a number `accepts` takes, else the one-line `allowed`."""

    def parse(text: str) -> float:
        value = finite_number(text)
        if value is None or not accepts(value):
            raise argparse.ArgumentTypeError(f"{quoted(text)} is not allowed; {allowed}")
        return value

    return parse


_fraction = _number_in("a fraction from 0 to 1, e.g. 0.95", lambda value: 0 <= value <= 1)
_percent = _number_in("a percentage above 0 and at most 100", lambda value: 0 < value <= 100)
_positive = _number_in("a positive number", lambda value: 0 < value < 1e9)


def register(subparsers: Any) -> None:
    plan = subparsers.add_parser(
        "plan",
        help="capacity plan: models resident, cache-hit rate, cold loads, instances, cost per instance type",
        description="Predict, for each GPU multi-model instance type, how many of the manifest's models stay "
        "loaded per instance, the cache-hit rate under SageMaker's least-recently-used eviction, cold loads "
        "per hour, the instances the traffic needs and the monthly cost, against one endpoint per model "
        "(docs/capacity-planning.md).",
    )
    plan.add_argument("--traffic", type=Path, help="traffic file (YAML or JSON); not needed with --compare")
    plan.add_argument(
        "--manifest",
        help=f"build manifest: a path or s3://bucket/key (default {BUILD_DIR / MANIFEST_FILE_NAME}; with "
        "--compare, the one the load test used)",
    )
    plan.add_argument(
        "--region", default=DEFAULT_REGION, help=f"region for prices (default {DEFAULT_REGION})"
    )
    plan.add_argument(
        "--stack",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="project checkout whose stack the plan is for: its settings (cdk.json, cdk.context.json, "
        "--context) give the defaults of the instance counts, GPU target, Triton tag and instance types "
        "(default: %(default)s)",
    )
    plan.add_argument(
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting as `cdk -c KEY=VALUE` (or make's CONTEXT) gives it; repeatable",
    )
    plan.add_argument(
        "--no-stack", action="store_true", help="ignore the stack's settings: the planner's own defaults"
    )
    plan.add_argument(
        "--triton-tag",
        choices=PLATFORM.triton_image_tags,
        metavar="TAG",
        help="serving image tag: instance types whose GPU cannot run it are left out (default: the "
        f"stack's tritonImageTag, else {PLATFORM.images.default_tag.value})",
    )
    plan.add_argument(
        "--instance-types",
        nargs="+",
        default=(),
        metavar="TYPE",
        help="only these types (default: those `make synth` accepts for the stack's catalog)",
    )
    plan.add_argument(
        "--gpu-utilization-target",
        type=_percent,
        metavar="PERCENT",
        help="the endpoint's autoscaling target (default: the stack's gpuUtilizationTarget, else "
        f"{DEFAULT_GPU_UTILIZATION_TARGET:g})",
    )
    plan.add_argument(
        "--min-hit-rate", type=_fraction, metavar="FRACTION", help="overrides the traffic file's"
    )
    plan.add_argument(
        "--p99-ms", type=_positive, metavar="MS", help="overrides the traffic file's p99 target"
    )
    plan.add_argument(
        "--min-instances",
        type=positive_int,
        help="per endpoint (default: the stack's minInstanceCount, else 1)",
    )
    plan.add_argument(
        "--max-instances",
        type=positive_int,
        help=f"largest count tried (default: the stack's maxInstanceCount, else {DEFAULT_MAX_INSTANCES})",
    )
    plan.add_argument(
        "--simulated-requests",
        type=positive_int,
        default=DEFAULT_SIMULATED_REQUESTS,
        metavar="N",
        help=f"requests simulated per configuration, warm-up aside (default {DEFAULT_SIMULATED_REQUESTS:,})",
    )
    plan.add_argument("--disk-gb", type=_positive, help="storage volume per instance, overriding the table")
    plan.add_argument(
        "--model-budget",
        type=positive_int,
        metavar="K",
        help="plan for the local Triton with this model budget instead of SageMaker instance types",
    )
    plan.add_argument(
        "--price", action="append", default=[], metavar="TYPE=USD", help="hourly price of a type (repeatable)"
    )
    plan.add_argument(
        "--prices", type=Path, metavar="FILE", help="YAML or JSON: instance type -> USD per hour"
    )
    plan.add_argument(
        "--price-list-api",
        action="store_true",
        help="look prices up in the AWS Price List API (needs credentials and pricing:GetProducts)",
    )
    plan.add_argument("--json", type=Path, metavar="FILE", help="write the plan (or the comparison) as JSON")
    plan.add_argument(
        "--chart",
        type=Path,
        metavar="FILE.png",
        help="cost and hit rate per instance type (with --compare: predicted and measured hit rate per "
        "model)",
    )
    plan.add_argument(
        "--placement",
        action="store_true",
        help="also compare, per model and for the whole traffic, the multi-model endpoint against inference "
        "components (all MME, hybrid, all dedicated: monthly cost and cold starts; docs/placement.md)",
    )
    plan.add_argument(
        "--write-placement",
        type=Path,
        nargs="?",
        const=Path("models.yaml"),
        metavar="CATALOG",
        help="write the recommended placement into the catalog's entries (default models.yaml); implies "
        "--placement",
    )
    plan.add_argument(
        "--compare",
        type=Path,
        metavar="LOADTEST.json",
        help="predict the configuration a `triton-mme loadtest` ran against and print both side by side",
    )
    plan.set_defaults(handler=_plan)


def _stack_reader() -> StackReader | None:
    """The CDK app's reader of a checkout's settings, where triton_mme_cdk is installed (else None: the
    planner's defaults). The command wires the app to the planner, which imports nothing of the app."""
    try:
        from triton_mme_cdk.stack_plan import stack_plan
    except ModuleNotFoundError as error:
        if error.name != "triton_mme_cdk":
            raise  # installed, but lacking one of its own dependencies: a real error
        return None
    return stack_plan


def _plan_for(args: argparse.Namespace) -> Any:
    from triton_mme.planner.stack import plan_for

    return plan_for(
        None if args.no_stack else args.stack,
        args.context,
        min_instances=args.min_instances,
        max_instances=args.max_instances,
        gpu_utilization_target=args.gpu_utilization_target,
        triton_tag=args.triton_tag,
        instance_types=args.instance_types,
        default_triton_tag=PLATFORM.images.default_tag.value,
        read_stack=_stack_reader(),
    )


def _options(args: argparse.Namespace, targets: Any, chosen: Any) -> Any:
    from triton_mme.planner.options import PlanOptions

    return PlanOptions(
        gpu_utilization_target=chosen.gpu_utilization_target.value,
        min_cache_hit_rate=args.min_hit_rate if args.min_hit_rate is not None else targets.min_cache_hit_rate,
        p99_latency_ms=args.p99_ms if args.p99_ms is not None else targets.p99_latency_ms,
        min_instances=chosen.min_instances.value,
        max_instances=chosen.max_instances.value,
        simulated_requests=args.simulated_requests,
        disk_gb=args.disk_gb,
        min_instances_origin=chosen.min_instances.origin,
        max_instances_origin=chosen.max_instances.origin,
    )


def _plan(args: argparse.Namespace) -> int:
    from triton_mme.core.errors import UserError
    from triton_mme.planner.plan_document import ComparisonDocument, write_json, write_plan
    from triton_mme.planner.prices import PriceBook, parse_price, pricing_client, read_price_file
    from triton_mme.planner.report import render_chart, render_comparison, render_plan
    from triton_mme.planner.run import compare_with, plan_from_files, read_load_test
    from triton_mme.planner.traffic import read_traffic

    def warn(message: str) -> None:
        print(f"note: {message}", file=sys.stderr)

    given = read_price_file(args.prices) if args.prices else {}
    given.update(parse_price(text) for text in args.price)
    prices = PriceBook(args.region, given, pricing_client() if args.price_list_api else None)
    chosen = _plan_for(args)
    if args.compare is not None:
        report = read_load_test(args.compare)
        comparison = compare_with(
            args.compare,
            _options(args, report.traffic.targets, chosen),
            manifest=args.manifest,
            prices=prices,
            warn=warn,
        )
        print(render_comparison(comparison.predicted, comparison.measured), end="")
        if args.chart:
            from triton_mme.planner.report import render_comparison_chart

            render_comparison_chart(comparison.predicted, comparison.measured, args.chart)
        if args.json:
            write_json(
                args.json, ComparisonDocument(predicted=comparison.predicted, measured=comparison.measured)
            )
        return 0
    if args.traffic is None:
        raise UserError("--traffic FILE is required (or --compare LOADTEST.json)")
    traffic = read_traffic(args.traffic)
    manifest = args.manifest or str(BUILD_DIR / MANIFEST_FILE_NAME)
    plan = plan_from_files(
        traffic,
        manifest,
        _options(args, traffic.targets, chosen),
        prices,
        triton_tag=chosen.triton_tag.value,
        instance_types=tuple(chosen.instance_types.value),
        model_budget=args.model_budget,
        origin=str(args.traffic),
        warn=warn,
    )
    if args.model_budget is None:
        print("\n".join(chosen.lines()))
    print(render_plan(plan), end="")
    placement = _placement(args, plan) if args.placement or args.write_placement is not None else None
    if args.json:
        write_plan(
            args.json, plan, triton_tag=chosen.triton_tag.value, manifest=manifest, placement=placement
        )
    if args.chart:
        render_chart(plan, args.chart)
    return 0


def _placement(args: argparse.Namespace, plan: Any) -> Any:
    """Print the placement comparison; write it into the catalog where asked."""
    from triton_mme.core.errors import UserError
    from triton_mme.planner.placement import placement_for
    from triton_mme.planner.placement_report import render_placement

    if args.model_budget is not None:
        raise UserError("--placement: plans SageMaker instance types; allowed without --model-budget")
    placement = placement_for(plan)
    if placement is None:
        raise UserError("--placement: no instance type serves the traffic in any placement (see the table)")
    print()
    print(render_placement(placement), end="")
    if args.write_placement is not None:
        from triton_mme.planner.write_placement import write_placement

        changes = write_placement(args.write_placement, placement)
        for change in changes:
            print(f"{args.write_placement}: {change}")
        if not any("->" in change for change in changes):
            print(f"{args.write_placement}: placements unchanged")
    return placement

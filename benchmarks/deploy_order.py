"""How long `cdk deploy` can wait before CloudFormation creates the SageMaker Model and endpoint config, read
from a synthesized template's dependency graph.

`python -m benchmarks.deploy_order [TEMPLATE ...] [--out PREFIX]` (default: cdk.out's stack template, results
under benchmarks/results/deploy-order.{md,json}).

CloudFormation starts a resource once everything it depends on (DependsOn, Ref, Fn::GetAtt) is complete. A
resource's wait bound is the longest it can stay in progress by the template's own timeouts: a custom
resource's ServiceTimeout, and for the model build its wait condition's Timeout (both stages' queueing and
timeouts and a margin). Resources without a timeout count 0 (IAM, Lambda, S3 and the like take seconds to
minutes, which no timeout bounds), so the figure is the template's worst case of waiting, not a forecast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks.context import REPO_ROOT

DEFAULT_TEMPLATE = REPO_ROOT / "cdk.out" / "TritonMultiModelEndpoint.template.json"
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "deploy-order"
TARGETS = ("AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig", "AWS::SageMaker::Endpoint")
BUILD_TYPE = "AWS::CloudFormation::WaitCondition"


def dependencies(resources: dict[str, Any]) -> dict[str, set[str]]:
    """Each resource's direct dependencies: DependsOn, and every Ref or Fn::GetAtt of another resource."""

    def referenced(value: Any) -> set[str]:
        if isinstance(value, dict):
            found = set()
            if isinstance(value.get("Ref"), str):
                found.add(value["Ref"])
            if isinstance(value.get("Fn::GetAtt"), list):
                found.add(value["Fn::GetAtt"][0])
            return found.union(*(referenced(v) for v in value.values()))
        if isinstance(value, list):
            return set().union(*(referenced(v) for v in value))
        return set()

    return {
        logical_id: (referenced(resource.get("Properties", {})) | set(_depends_on(resource))) & set(resources)
        for logical_id, resource in resources.items()
    }


def upstream(graph: dict[str, set[str]], start: str) -> set[str]:
    """Everything `start` waits for, directly or through another resource."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dependency in graph[todo.pop()] - seen:
            seen.add(dependency)
            todo.append(dependency)
    return seen


def _depends_on(resource: dict[str, Any]) -> list[str]:
    value = resource.get("DependsOn", [])
    return [value] if isinstance(value, str) else list(value)


def wait_bound_minutes(resources: dict[str, Any], logical_id: str) -> float:
    """The longest `logical_id` can stay in progress by the template's own timeouts (0 without one)."""
    resource = resources[logical_id]
    properties = resource.get("Properties", {})
    bounds = []
    if "ServiceTimeout" in properties:
        bounds.append(float(properties["ServiceTimeout"]) / 60)
    if resource.get("Type") == BUILD_TYPE:
        bounds.append(float(properties["Timeout"]) / 60)
    return min(bounds) if bounds else 0.0


@dataclass(frozen=True)
class Wait:
    """The longest chain of waits before CloudFormation can start one resource."""

    resource_type: str
    logical_id: str
    minutes: float
    chain: list[str]
    waits_for_build: bool


def longest_waits(template: dict[str, Any]) -> list[Wait]:
    """For each target resource type: the worst-case minutes of waiting before it starts, and the chain."""
    resources = template["Resources"]
    graph = dependencies(resources)

    @cache
    def finish(logical_id: str) -> tuple[float, tuple[str, ...]]:
        start, chain = begin(logical_id)
        return start + wait_bound_minutes(resources, logical_id), (*chain, logical_id)

    @cache
    def begin(logical_id: str) -> tuple[float, tuple[str, ...]]:
        return max((finish(need) for need in graph[logical_id]), default=(0.0, ()))

    builds = {logical_id for logical_id, r in resources.items() if r["Type"] == BUILD_TYPE}
    waits = []
    for resource_type in TARGETS:
        for logical_id, resource in resources.items():
            if resource["Type"] != resource_type:
                continue
            minutes, chain = begin(logical_id)
            waited = [need for need in chain if wait_bound_minutes(resources, need) > 0]
            waits.append(
                Wait(resource_type, logical_id, minutes, waited, bool(builds & upstream(graph, logical_id)))
            )
    return waits


def report(labelled: Iterable[tuple[str, list[Wait]]]) -> str:
    lines = [
        "# Minutes from `cdk deploy` to CreateModel / CreateEndpointConfig",
        "",
        "Read from each template's dependency graph (`python -m benchmarks.deploy_order`): the longest",
        "chain of resources each one waits for, counting each by its own timeout (custom resources'",
        "ServiceTimeout, the model build's wait condition Timeout); resources without one count 0.",
        "",
        "| Template | Resource | Worst-case wait before it starts | Waits on | Waits for the build |",
        "|---|---|---|---|---|",
    ]
    for label, waits in labelled:
        for wait in waits:
            chain = ", ".join(wait.chain) or "nothing with a timeout"
            built = "yes" if wait.waits_for_build else "no"
            lines.append(f"| {label} | {wait.resource_type} | {wait.minutes:g} min | {chain} | {built} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.deploy_order", description=__doc__)
    parser.add_argument(
        "templates",
        nargs="*",
        metavar="[LABEL=]TEMPLATE",
        help=f"synthesized templates (default: {DEFAULT_TEMPLATE.relative_to(REPO_ROOT)})",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results path without extension")
    args = parser.parse_args(argv)
    labelled = []
    for entry in args.templates or [f"this commit={DEFAULT_TEMPLATE}"]:
        label, _, path = entry.rpartition("=")
        template_path = Path(path)
        if not template_path.is_file():
            print(f"error: no template at {template_path}; run `make synth` first", file=sys.stderr)
            return 1
        template = json.loads(template_path.read_text(encoding="utf-8"))
        labelled.append((label or template_path.name, longest_waits(template)))
    text = report(labelled)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(text, encoding="utf-8")
    data = {label: [asdict(wait) for wait in waits] for label, waits in labelled}
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

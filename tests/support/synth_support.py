"""Synthesis helpers for the CDK tests: a bare stack for one construct, or the app composed exactly as app.py
does, both with cdk.json's feature flags."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template
from constructs import IConstruct

from triton_mme_cdk.composition import compose
from triton_mme_cdk.settings import Settings
from triton_mme_cdk.stack import TritonMmeStack

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_JSON_CONTEXT: dict[str, Any] = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
FEATURE_FLAGS = {key: value for key, value in CDK_JSON_CONTEXT.items() if key.startswith("@")}
# The default catalog without TensorRT, for a V100 endpoint or a tag whose TensorRT has no pip pin.
WITHOUT_TENSORRT = str(REPO_ROOT / "tests" / "support" / "models-without-tensorrt.yaml")
# Both placements: the multi-model endpoint and an inference component endpoint with two dedicated models.
HYBRID = str(REPO_ROOT / "tests" / "support" / "models-hybrid.yaml")
KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def bare_stack(name: str = "Test", outdir: Path | None = None, **kwargs: Any) -> cdk.Stack:
    """An empty stack in its own app, for tests that build one construct."""
    app = cdk.App(context=FEATURE_FLAGS, outdir=str(outdir) if outdir else None)
    return cdk.Stack(app, name, **kwargs)


def template_logical_id(construct: IConstruct) -> str:
    """The logical id of a construct's CloudFormation resource (its default child for L2s)."""
    element = construct.node.default_child or construct
    assert isinstance(element, cdk.CfnElement)
    stack = cdk.Stack.of(element)
    return str(stack.resolve(stack.get_logical_id(element)))


def with_nag(stack: cdk.Stack) -> Template:
    """The stack's template after synthesizing its app with the AwsSolutions checks (raises on a finding)."""
    from cdk_nag import AwsSolutionsChecks

    app = stack.node.root
    assert isinstance(app, cdk.App)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    return Template.from_stack(stack)


@dataclass(frozen=True)
class Synthesized:
    stack: TritonMmeStack
    template: Template
    assembly_dir: Path

    @property
    def resources(self) -> dict[str, Any]:
        return self.template.to_json()["Resources"]

    def validation_report(self) -> dict[str, Any]:
        return json.loads((self.assembly_dir / "validation-report.json").read_text())


def synthesize(settings: Settings, outdir: Path) -> Synthesized:
    app = cdk.App(outdir=str(outdir), context=FEATURE_FLAGS)
    stack = compose(app, settings)
    app.synth()
    return Synthesized(stack=stack, template=Template.from_stack(stack), assembly_dir=outdir)


# The settings variants the CDK tests reuse (one synthesis each per session: tests/infra/conftest.py), each
# checked by cdk-nag and cfn-lint in test_app.py.
VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    # Both stages fanned out as CodeBuild batch builds (two shards of the default catalog).
    "fanned-out": {"build_runners": 4},
    # Stages that may outlast the custom resource's hour: the build is waited for on a wait condition.
    "past-the-hour": {"build_timeout_minutes": 300},
    "kms-on-nvme-type": {"kms_key_arn": KEY_ARN},
    "kms-on-p3": {
        "kms_key_arn": KEY_ARN,
        "instance_type": "ml.p3.2xlarge",
        "triton_image_tag": "24.05-py3",
        "model_catalog": WITHOUT_TENSORRT,
        "build_log_retention_days": 7,
    },
    # Every scaling, alarm and log setting away from its default, with the invocations policy on, on a larger
    # instance of the default's family.
    "tuned": {
        "instance_type": "ml.g5.2xlarge",
        "min_instance_count": 2,
        "initial_instance_count": 3,
        "max_instance_count": 8,
        "gpu_utilization_target": 72.5,
        "invocations_per_instance_target": 900,
        "alarm_email": "ops@example.com",
        "endpoint_log_retention_days": 90,
    },
    "pinned-region": {"region": "ap-northeast-1", "triton_image_tag": "25.09-py3"},
    "unconfirmed-build-region": {"region": "ap-northeast-2", "allow_unconfirmed_build_region": True},
    "no-scaling-no-isolation": {"autoscaling": False, "network_isolation": False},
    # Each update strategy with its own settings away from their defaults (test_app.py checks they reach the
    # endpoint's DeploymentConfig on these same syntheses).
    "rolling-update": {"deployment_strategy": "rolling", "deployment_rollback_batch_size": "2"},
    "linear-update": {
        "deployment_strategy": "linear",
        "deployment_linear_step_size": "50%",
        "deployment_wait_seconds": 300,
        "deployment_termination_wait_seconds": 120,
        "deployment_timeout_seconds": 3600,
    },
    "hybrid-placement": {"model_catalog": HYBRID},
}


# What a function's role may do to CloudWatch Logs beyond reading: create groups and streams, write events.
LOG_WRITE_ACTIONS = frozenset({"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:*"})


@dataclass(frozen=True)
class FunctionLogging:
    """One Lambda function of a template: its role's managed policies, the group its LoggingConfig names
    (None: Lambda's default, /aws/lambda/<name>), and each resource its role's policies let it write logs
    to."""

    managed_policies: list[Any]
    log_group: Any
    writable: list[Any]


def function_logging(template: Template) -> dict[str, FunctionLogging]:
    """Every AWS::Lambda::Function of `template`, by logical id, with what its role may write to Logs."""
    resources = template.to_json()["Resources"]
    found = {}
    for logical_id, function in template.find_resources("AWS::Lambda::Function").items():
        role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
        writable = [
            resource
            for policy in resources.values()
            if policy["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            if statement["Effect"] == "Allow" and LOG_WRITE_ACTIONS & set(_as_list(statement["Action"]))
            for resource in _as_list(statement["Resource"])
        ]
        found[logical_id] = FunctionLogging(
            managed_policies=resources[role_id]["Properties"].get("ManagedPolicyArns", []),
            log_group=function["Properties"].get("LoggingConfig", {}).get("LogGroup"),
            writable=writable,
        )
    return found


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def checkov_skips(template: Template, logical_id: str) -> dict[str, str]:
    """The checkov checks a resource skips, with each reason
    (triton_mme_cdk/constructs/scanners/checkov.py)."""
    metadata = template.to_json()["Resources"][logical_id].get("Metadata", {})
    return {skip["id"]: skip["comment"] for skip in metadata.get("checkov", {}).get("skip", [])}

"""Synthesis helpers for the CDK tests: a bare stack for one construct, or the app composed exactly as app.py
does, both with cdk.json's feature flags."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from triton_mme_cdk.composition import compose
from triton_mme_cdk.settings import Settings
from triton_mme_cdk.stack import TritonMmeStack

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_JSON_CONTEXT: dict[str, Any] = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
FEATURE_FLAGS = {key: value for key, value in CDK_JSON_CONTEXT.items() if key.startswith("@")}
# The default catalog without TensorRT, for a V100 endpoint or a tag whose TensorRT has no pip pin.
WITHOUT_TENSORRT = str(REPO_ROOT / "tests" / "support" / "models-without-tensorrt.yaml")
KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def bare_stack(name: str = "Test", outdir: Path | None = None, **kwargs: Any) -> cdk.Stack:
    """An empty stack in its own app, for tests that build one construct."""
    app = cdk.App(context=FEATURE_FLAGS, outdir=str(outdir) if outdir else None)
    return cdk.Stack(app, name, **kwargs)


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

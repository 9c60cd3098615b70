"""Synthesis helpers for the CDK tests: the app composed exactly as app.py does, with cdk.json's flags."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from infra.composition import compose
from infra.settings import Settings
from infra.stack import TritonMmeStack
from triton_mme.core.catalog import load_catalog

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_JSON_CONTEXT: dict[str, Any] = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
FEATURE_FLAGS = {key: value for key, value in CDK_JSON_CONTEXT.items() if key.startswith("@")}


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
    stack = compose(app, settings, load_catalog(REPO_ROOT / settings.model_catalog))
    app.synth()
    return Synthesized(stack=stack, template=Template.from_stack(stack), assembly_dir=outdir)

"""cdk-nag AwsSolutions and cfn-lint over every variant: zero findings, every acknowledgment reasoned."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from cfnlint.api import ManualArgs, lint_file
from synth_support import FEATURE_FLAGS, Synthesized

KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "kms-on-nvme-type": {"kms_key_arn": KEY_ARN},
    "kms-on-p3": {"kms_key_arn": KEY_ARN, "instance_type": "ml.p3.2xlarge"},
    "invocations-policy": {"invocations_per_instance_target": 900},
    "pinned-region": {"region": "ap-southeast-3", "triton_image_tag": "24.09-py3"},
}
LINT_REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-3", "cn-north-1"]


def nag_findings(synth: Synthesized) -> list[dict[str, Any]]:
    report = synth.validation_report()
    return [
        violation
        for plugin in report["pluginReports"]
        if plugin["pluginName"] == "AwsSolutions"
        for violation in plugin["violations"]
    ]


@pytest.mark.parametrize("variant", VARIANTS)
def test_cdk_nag_reports_nothing_unacknowledged(synth_with: Callable[..., Synthesized], variant: str) -> None:
    findings = nag_findings(synth_with(**VARIANTS[variant]))
    assert findings == [], [f"{f['ruleName']} ({f['severity']})" for f in findings]


def test_cdk_nag_is_live_and_would_catch_a_broad_grant(tmp_path: Path) -> None:
    """A negative control: the same plugin wiring flags an unacknowledged wildcard."""
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path), context=FEATURE_FLAGS)
    stack = cdk.Stack(app, "Probe")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    rules = {v["ruleName"] for p in report["pluginReports"] for v in p["violations"]}
    assert "AwsSolutions-IAM5[Resource::*]" in rules


def test_every_acknowledgment_has_a_reason(default_synth: Synthesized) -> None:
    reasons: dict[str, str] = {}
    for construct in default_synth.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                reasons.update(entry.data)
    ours = {rule for rule in reasons if any(k in rule for k in ("-S1", "-SM1", "-SM2", "-IAM5[Resource::*]"))}
    assert len(ours) == 4, sorted(reasons)
    for rule, reason in reasons.items():
        assert len(reason.strip()) >= 30, f"{rule}: the reason must explain the exception"


@pytest.mark.parametrize("variant", VARIANTS)
def test_cfn_lint_is_clean_on_every_template(synth_with: Callable[..., Synthesized], variant: str) -> None:
    synth = synth_with(**VARIANTS[variant])
    templates = sorted(synth.assembly_dir.glob("*.template.json"))
    assert templates, "the assembly holds no template"
    regions = [synth.stack.region] if variant == "pinned-region" else LINT_REGIONS
    for template in templates:
        matches = lint_file(template, config=ManualArgs(regions=regions))
        assert [str(m) for m in matches] == []

"""The real entry points: app.py in-process and the `cdk` CLI, stopping with one line on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from synth_support import CDK_JSON_CONTEXT, REPO_ROOT

import app


def run_app(outdir: Path, **context: object) -> int:
    """app.main() with cdk.json's context plus `-c`-style overrides, as the CLI would run it."""
    return app.main(cdk.App(outdir=str(outdir), context={**CDK_JSON_CONTEXT, **context}))


def test_bad_catalog_stops_synthesis_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = tmp_path / "models.yaml"
    catalog.write_text("models:\n  - name: Bad_Name\n    source: torchvision:resnet50\n")
    outdir = tmp_path / "cdk.out"
    assert run_app(outdir, modelCatalog=str(catalog)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {catalog}: model 'Bad_Name': ")
    assert not list(outdir.glob("*.template.json")), "nothing may be synthesized from a bad catalog"


@pytest.mark.parametrize(
    ("models", "message"),
    [
        (
            "models: []\n",
            "catalog: the 'models' list is empty; allowed: at least one model entry (docs/catalog.md)",
        ),
        (
            "models:\n  - {name: r, source: 'torchvision:resnet5000', weights: random, formats: [onnx], "
            "max_batch_size: 8}\n",
            "model 'r': source: torchvision has no model 'resnet5000'; did you mean resnet50? allowed: a "
            "name of torchvision.models.list_models() (121 names, e.g. resnet50)",
        ),
        (
            "models:\n  - {name: t, source: 'huggingface:FacebookAI/roberta-larg', weights: random, "
            "formats: [onnx], max_batch_size: 8}\n",
            "model 't': hf_config: no shipped config 'roberta-larg'; did you mean roberta-large? allowed: a "
            "mapping of config fields or one of: roberta-base, roberta-large",
        ),
    ],
)
def test_an_empty_catalog_or_a_source_that_does_not_resolve_stops_synthesis_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: str, message: str
) -> None:
    catalog = tmp_path / "models.yaml"
    catalog.write_text(models)
    outdir = tmp_path / "cdk.out"
    assert run_app(outdir, modelCatalog=str(catalog)) == 1
    assert capsys.readouterr().err == f"error: {catalog}: {message}\n"
    assert not list(outdir.glob("*.template.json"))


def test_an_unknown_context_key_stops_synthesis_naming_the_closest_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(tmp_path, instanceTyp="ml.g5.2xlarge") == 1
    assert capsys.readouterr().err == (
        "error: unknown context key instanceTyp (cdk.json, cdk.context.json or -c); "
        "did you mean instanceType? allowed: a setting of docs/settings.md or a CDK feature flag "
        "(@aws-cdk/...)\n"
    )
    assert not list(tmp_path.glob("*.template.json"))


def test_missing_catalog_stops_synthesis_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(tmp_path, modelCatalog=str(tmp_path / "missing.yaml")) == 1
    err = capsys.readouterr().err
    assert (
        err
        == f"error: {tmp_path / 'missing.yaml'}: cannot read the model catalog (No such file or directory)\n"
    )


def test_bad_setting_stops_synthesis_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_app(tmp_path, minInstanceCount="3", initialInstanceCount="2") == 1
    assert capsys.readouterr().err == (
        "error: minInstanceCount=3 does not fit initialInstanceCount=2, maxInstanceCount=5 (the default); "
        "allowed: minInstanceCount <= initialInstanceCount <= maxInstanceCount\n"
    )


def test_good_settings_write_the_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)  # the default catalog path is relative, as under `cdk synth`
    assert run_app(tmp_path, instanceType="ml.g5.2xlarge", region="eu-west-1") == 0
    template = json.loads((tmp_path / "TritonMultiModelEndpoint.template.json").read_text())
    configs = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::EndpointConfig"]
    assert configs[0]["Properties"]["ProductionVariants"][0]["InstanceType"] == "ml.g5.2xlarge"


def cdk_synth_error_lines(out: Path, *context: str) -> list[str]:
    """The app's stderr lines of a failing `cdk synth -c ...` (the CLI's own context keys included)."""
    pairs = [part for pair in context for part in ("-c", pair)]
    result = subprocess.run(
        ["npx", "--no-install", "cdk", "--no-notices", "synth", *pairs, "-o", str(out)],
        cwd=REPO_ROOT,
        # As the Makefile runs it: Node's process warnings (the SDK's Node-version notice) off.
        env={
            **os.environ,
            "CDK_DISABLE_VERSION_CHECK": "1",
            "CDK_DISABLE_CLI_TELEMETRY": "true",
            "NODE_NO_WARNINGS": "1",
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert not list(out.glob("*.template.json"))
    # The CLI adds its own "<app>: Subprocess exited with error 1" line after the app's message.
    return [
        line for line in result.stderr.splitlines() if line and "Subprocess exited with error" not in line
    ]


def test_cdk_cli_rejects_a_bad_instance_type_with_one_line(tmp_path: Path) -> None:
    app_lines = cdk_synth_error_lines(tmp_path, "instanceType=ml.m5.xlarge")
    assert len(app_lines) == 1, app_lines
    assert app_lines[0].startswith("error: instanceType=ml.m5.xlarge is not a single-GPU type")
    assert "allowed: ml.g4dn.xlarge" in app_lines[0]


def test_cdk_cli_rejects_a_mistyped_key_but_not_its_own_keys(tmp_path: Path) -> None:
    # The CLI adds aws:cdk:* keys to the context of every synth; only the typo is refused.
    app_lines = cdk_synth_error_lines(tmp_path, "instanceTyp=ml.g5.2xlarge")
    assert app_lines == [
        "error: unknown context key instanceTyp (cdk.json, cdk.context.json or -c); "
        "did you mean instanceType? allowed: a setting of docs/settings.md or a CDK feature flag "
        "(@aws-cdk/...)"
    ]


def test_app_stops_with_one_line_on_a_bad_alarm_email() -> None:
    result = subprocess.run(
        [sys.executable, "app.py"],
        cwd=REPO_ROOT,
        env={**os.environ, "CDK_CONTEXT_JSON": json.dumps({"alarmEmail": "ops-at-example.com"})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: alarmEmail=ops-at-example.com is not an email address; allowed: e.g. ops@example.com"
    ]

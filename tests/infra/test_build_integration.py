"""The build runner inside the app: settings, the build-before-endpoint chain and the TensorRT guard."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import aws_cdk as cdk
import pytest
from synth_support import CDK_JSON_CONTEXT, REPO_ROOT, Synthesized

import app
from infra.build_target import check_build_target
from infra.settings import Settings, SettingsError
from triton_mme.core.catalog import load_catalog, parse_catalog

CATALOG = load_catalog(REPO_ROOT / "models.yaml")
WITHOUT_TENSORRT = parse_catalog(
    {"models": [{"name": "m", "source": "torchvision:resnet18", "weights": "random", "formats": ["onnx"],
                 "max_batch_size": 8}]}
)  # fmt: skip


def logical_id(synth: Synthesized, resource_type: str) -> str:
    (found,) = synth.template.find_resources(resource_type)
    return str(found)


def test_the_model_waits_for_the_build_which_waits_for_the_store(default_synth: Synthesized) -> None:
    resources = default_synth.resources
    build = logical_id(default_synth, "Custom::ModelBuild")
    model = resources[logical_id(default_synth, "AWS::SageMaker::Model")]
    assert build in model["DependsOn"]
    # The endpoint config and endpoint follow the model, so nothing of the endpoint moves before the build.
    config = resources[logical_id(default_synth, "AWS::SageMaker::EndpointConfig")]
    assert "GetAtt" in json.dumps(config["Properties"]["ProductionVariants"])
    project = resources[logical_id(default_synth, "AWS::CodeBuild::Project")]
    bucket_ref = {"Ref": next(k for k in resources if k.startswith("ModelStoreBucket"))}
    assert bucket_ref in [v["Value"] for v in project["Properties"]["Environment"]["EnvironmentVariables"]]
    assert resources[build]["Properties"]["ProjectName"] == {
        "Ref": logical_id(default_synth, "AWS::CodeBuild::Project")
    }


def test_default_runner_is_the_small_gpu_with_tensorrt_for_the_serving_image(
    default_synth: Synthesized,
) -> None:
    project = default_synth.resources[logical_id(default_synth, "AWS::CodeBuild::Project")]["Properties"]
    assert project["Environment"]["ComputeType"] == "BUILD_GENERAL1_SMALL"
    assert project["TimeoutInMinutes"] == 50
    variables = {v["Name"]: v["Value"] for v in project["Environment"]["EnvironmentVariables"]}
    assert variables["TRITON_IMAGE_TAG"] == "25.04-py3"
    assert variables["TENSORRT_REQUIREMENT"] == "tensorrt-cu12==10.9.0.34"


def test_runner_settings_reach_the_project_and_its_logs(synth_with: Callable[..., Synthesized]) -> None:
    synth = synth_with(
        builder_compute_type="LARGE",
        instance_type="ml.p3.2xlarge",
        build_timeout_minutes=30,
        build_log_retention_days=7,
    )
    project = synth.resources[logical_id(synth, "AWS::CodeBuild::Project")]["Properties"]
    assert project["Environment"]["ComputeType"] == "BUILD_GENERAL1_LARGE"
    assert project["TimeoutInMinutes"] == 30
    group = project["LogsConfig"]["CloudWatchLogs"]["GroupName"]["Ref"]
    assert synth.resources[group]["Properties"]["RetentionInDays"] == 7


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"builderComputeType": "MEDIUM"},
            "builderComputeType=MEDIUM is not a CodeBuild GPU size; allowed: SMALL",
        ),
        ({"buildTimeoutMinutes": "90"}, "buildTimeoutMinutes=90 is out of range; allowed: 5..55 (cdk deploy"),
        ({"buildTimeoutMinutes": "soon"}, "buildTimeoutMinutes=soon is not a whole number; allowed:"),
        (
            {"buildLogRetentionDays": "10"},
            "buildLogRetentionDays=10 is not a log retention; allowed: 1, 3, 5,",
        ),
    ],
)
def test_bad_runner_settings_fail_in_one_line(context: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as error:
        Settings.from_context(context)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


DROP = "or drop 'tensorrt' from the catalog's formats"


@pytest.mark.parametrize(
    ("overrides", "fix"),
    [
        ({"instance_type": "ml.g4dn.xlarge"}, f"use an ml.g5.* instanceType, {DROP}"),
        (
            {"instance_type": "ml.p3.2xlarge"},
            f"use an ml.g5.* instanceType, or builderComputeType=LARGE, {DROP}",
        ),
        (
            {"builder_compute_type": "LARGE"},
            f"use an ml.p3.* instanceType, or builderComputeType=SMALL, {DROP}",
        ),
    ],
)
def test_tensorrt_guard_names_the_mismatch_and_the_fixes(overrides: dict[str, str], fix: str) -> None:
    settings = Settings(**overrides)
    with pytest.raises(SettingsError) as error:
        check_build_target(settings, CATALOG)
    message = str(error.value)
    assert message.startswith(
        f"the catalog asks for tensorrt, but builderComputeType={settings.builder_compute_type}"
    )
    assert f"instanceType={settings.instance_type}; {fix}" in message


def test_tensorrt_guard_refuses_a_serving_image_without_a_known_tensorrt() -> None:
    with pytest.raises(SettingsError, match=r"TensorRT of tritonImageTag=26\.05-py3 has no known pip pin"):
        check_build_target(Settings(triton_image_tag="26.05-py3"), CATALOG)


@pytest.mark.parametrize(
    ("settings", "catalog"),
    [
        (Settings(), CATALOG),
        (Settings(builder_compute_type="LARGE", instance_type="ml.p3.2xlarge"), CATALOG),
        (Settings(instance_type="ml.g4dn.xlarge"), WITHOUT_TENSORRT),
    ],
)
def test_tensorrt_guard_accepts_matching_gpus_and_catalogs_without_tensorrt(
    settings: Settings, catalog: object
) -> None:
    check_build_target(settings, catalog)  # type: ignore[arg-type]


def test_a_catalog_outside_the_project_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "models.yaml"
    with pytest.raises(SettingsError, match=rf"^modelCatalog={outside} is outside the project"):
        check_build_target(Settings(model_catalog=str(outside)), WITHOUT_TENSORRT)


def test_synthesis_stops_in_one_line_on_a_tensorrt_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO_ROOT)
    outdir = tmp_path / "cdk.out"
    assert (
        app.main(cdk.App(outdir=str(outdir), context={**CDK_JSON_CONTEXT, "instanceType": "ml.p3.2xlarge"}))
        == 1
    )
    err = capsys.readouterr().err
    assert err.startswith(
        "error: the catalog asks for tensorrt, but builderComputeType=SMALL builds on A10G (sm_86)"
    )
    assert err.count("\n") == 1
    assert not list(outdir.glob("*.template.json"))

"""What the build runner can build for the endpoint: runner settings and the TensorRT guard.

The guard compares compute capabilities from the platform table: a TensorRT plan runs only on the GPU
generation that built it."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from synth_support import CDK_JSON_CONTEXT, REPO_ROOT

import app
from triton_mme.core.catalog import load_catalog, parse_catalog
from triton_mme_cdk.build_target import check_build_target, tensorrt_problem
from triton_mme_cdk.settings import Settings, SettingsError

CATALOG = load_catalog(REPO_ROOT / "models.yaml")
WITHOUT_TENSORRT = parse_catalog(
    {"models": [{"name": "m", "source": "torchvision:resnet18", "weights": "random", "formats": ["onnx"],
                 "max_batch_size": 8}]}
)  # fmt: skip


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"builderComputeType": "MEDIUM"},
            "builderComputeType=MEDIUM is not a CodeBuild GPU size; allowed: SMALL",
        ),
        (
            {"buildTimeoutMinutes": "90"},
            "buildTimeoutMinutes=90 is out of range; allowed: 5..40 (cdk deploy waits at most an hour for "
            "the build, the serving check and their queueing)",
        ),
        ({"buildTimeoutMinutes": "4"}, "buildTimeoutMinutes=4 is out of range; allowed: 5..40"),
        ({"servingCheckTimeoutMinutes": "4"}, "servingCheckTimeoutMinutes=4 is out of range; allowed: 5..40"),
        (
            {"servingCheckTimeoutMinutes": "20"},
            "buildTimeoutMinutes=30 and servingCheckTimeoutMinutes=20 add up to 50 minutes; allowed: at most "
            "45 together (cdk deploy waits",
        ),
        (
            {"buildQueueTimeoutMinutes": "10"},
            "buildQueueTimeoutMinutes=10 is out of range with buildTimeoutMinutes=30 and "
            "servingCheckTimeoutMinutes=15; allowed: 5..5 (both stages queue: 2 x queue + build + check must "
            "end 5 minutes before cdk deploy stops waiting after 60)",
        ),
        (
            {"buildQueueTimeoutMinutes": "4", "buildTimeoutMinutes": "30"},
            "buildQueueTimeoutMinutes=4 is out of",
        ),
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
    ("overrides", "mismatch", "fix"),
    [
        (
            {"instance_type": "ml.g4dn.xlarge"},
            "builds on A10G (compute capability 8.6), whose plans do not run on instanceType=ml.g4dn.xlarge "
            "(T4, 7.5)",
            f"use an instanceType with 8.6 (ml.g5.*), {DROP}",
        ),
        (
            {"instance_type": "ml.p3.2xlarge", "triton_image_tag": "24.05-py3"},
            "builds on A10G (compute capability 8.6), whose plans do not run on instanceType=ml.p3.2xlarge "
            "(V100, 7.0)",
            # LARGE would match the V100, but no build image supports it any more (test_platform_rules).
            f"use an instanceType with 8.6 (ml.g5.*), {DROP}",
        ),
    ],
)
def test_tensorrt_guard_compares_compute_capabilities_and_names_the_fixes(
    overrides: dict[str, str], mismatch: str, fix: str
) -> None:
    settings = Settings(**overrides)
    with pytest.raises(SettingsError) as error:
        check_build_target(settings, CATALOG)
    message = str(error.value)
    assert message.startswith(
        f"the catalog asks for tensorrt, but builderComputeType={settings.build.compute_type} {mismatch}"
    )
    assert message.endswith(fix)
    assert "\n" not in message


def test_tensorrt_guard_on_the_v100_runner_names_the_fixes() -> None:
    # Settings refuse LARGE with today's build images; the guard itself still compares the GPUs.
    assert tensorrt_problem(
        builder_compute_type="LARGE", instance_type="ml.g5.xlarge", triton_image_tag="24.05-py3"
    ) == (
        "the catalog asks for tensorrt, but builderComputeType=LARGE builds on V100 (compute capability "
        "7.0), whose plans do not run on instanceType=ml.g5.xlarge (A10G, 8.6); use an instanceType with 7.0 "
        f"(ml.p3.2xlarge), or builderComputeType=SMALL, {DROP}"
    )


def test_tensorrt_guard_refuses_a_serving_image_without_a_known_tensorrt() -> None:
    with pytest.raises(SettingsError, match=r"TensorRT of tritonImageTag=24\.03-py3 has no known pip pin"):
        check_build_target(Settings(triton_image_tag="24.03-py3"), CATALOG)


@pytest.mark.parametrize(
    ("settings", "catalog"),
    [
        (Settings(), CATALOG),
        (Settings(instance_type="ml.p3.2xlarge", triton_image_tag="24.05-py3"), WITHOUT_TENSORRT),
        (Settings(instance_type="ml.g4dn.xlarge"), WITHOUT_TENSORRT),
    ],
)
def test_tensorrt_guard_accepts_matching_gpus_and_catalogs_without_tensorrt(
    settings: Settings, catalog: object
) -> None:
    check_build_target(settings, catalog)  # type: ignore[arg-type]


def test_a_catalog_outside_the_project_is_accepted(tmp_path: Path) -> None:
    outside = tmp_path / "models.yaml"
    # The build runner copies it into its source (test_build_runner.py); nothing refuses it here.
    assert check_build_target(Settings(model_catalog=str(outside)), WITHOUT_TENSORRT) is None


def test_synthesis_stops_in_one_line_on_a_tensorrt_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO_ROOT)
    outdir = tmp_path / "cdk.out"
    assert (
        app.main(cdk.App(outdir=str(outdir), context={**CDK_JSON_CONTEXT, "instanceType": "ml.g4dn.xlarge"}))
        == 1
    )
    err = capsys.readouterr().err
    assert err.startswith(
        "error: the catalog asks for tensorrt, but builderComputeType=SMALL builds on A10G "
        "(compute capability 8.6)"
    )
    assert err.count("\n") == 1
    assert not list(outdir.glob("*.template.json"))

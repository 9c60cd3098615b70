"""What the build runner can build for the endpoint: runner settings and the TensorRT guard.

The guard compares compute capabilities from the platform table: a TensorRT plan runs only on the GPU
generation that built it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from synth_support import CDK_JSON_CONTEXT, REPO_ROOT

import app
from triton_mme.catalog import load_catalog, parse_catalog
from triton_mme_cdk.settings import LONG_BUILD_DEADLINE_MINUTES, Settings, SettingsError
from triton_mme_cdk.settings.build import AUTO_BUILD_RUNNERS_CAP
from triton_mme_cdk.settings.build_target import (
    build_time_problem,
    check_build_target,
    resolve_build_runners,
    tensorrt_problem,
)

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
            {"buildTimeoutMinutes": "701"},
            "buildTimeoutMinutes=701 is out of range; allowed: 5..700 (cdk deploy waits at most 12 hours for "
            "the build, the serving check and their queueing, on a wait condition, "
            "docs/deploy.md#time-limit)",
        ),
        ({"buildTimeoutMinutes": "4"}, "buildTimeoutMinutes=4 is out of range; allowed: 5..700"),
        (
            {"servingCheckTimeoutMinutes": "4"},
            "servingCheckTimeoutMinutes=4 is out of range; allowed: 5..700",
        ),
        (
            {"buildTimeoutMinutes": "600", "servingCheckTimeoutMinutes": "200"},
            "buildTimeoutMinutes=600 and servingCheckTimeoutMinutes=200 add up to 800 minutes; allowed: at "
            "most 705 together (cdk deploy waits",
        ),
        (
            {"buildQueueTimeoutMinutes": "336"},
            "buildQueueTimeoutMinutes=336 is out of range with buildTimeoutMinutes=30 and "
            "servingCheckTimeoutMinutes=15; allowed: 5..335 (both stages queue: 2 x queue + build + check "
            "must end 5 minutes before cdk deploy stops waiting after 12 hours)",
        ),
        (
            {"buildQueueTimeoutMinutes": "101", "buildTimeoutMinutes": "500"},
            "buildQueueTimeoutMinutes=101 is out of range with buildTimeoutMinutes=500 and "
            "servingCheckTimeoutMinutes=15; allowed: 5..100",
        ),
        (
            {"buildQueueTimeoutMinutes": "4", "buildTimeoutMinutes": "30"},
            "buildQueueTimeoutMinutes=4 is out of",
        ),
        (
            # Each stage within its own bounds, but a batch's levels all queue: 2 x 100 + 500 for the build,
            # 3 x 100 + 2 x 15 for the check, past the wait condition's 12 hours less the engine's margin.
            {"buildRunners": "2", "buildQueueTimeoutMinutes": "100", "buildTimeoutMinutes": "500"},
            "buildRunners=2 runs each stage as a batch whose levels all queue and run: 1030 minutes with "
            "buildQueueTimeoutMinutes=100, buildTimeoutMinutes=500 and servingCheckTimeoutMinutes=15; "
            "allowed: at most 715 (cdk deploy waits at most 12 hours",
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
    check_build_target(Settings(model_catalog=str(outside)), WITHOUT_TENSORRT)  # raises nothing


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


def s3_family(count: int, *, parameters: int = 11_689_512, formats: tuple[str, ...] = ("onnx",)) -> Any:
    """A locked family of `count` S3 state dicts of one architecture (ResNet-18's parameters by default)."""
    from triton_mme.catalog.lock import CatalogLock, CheckpointPin

    names = [f"c{i:04d}" for i in range(count)]
    source = "checkpoint:s3://own-models/vision/{variant}.safetensors"
    pins = {
        f"vision-{name}": CheckpointPin(
            source=source.replace("{variant}", name), sha256="a" * 64, size_bytes=1, parameters=parameters
        )
        for name in names
    }
    family = {"family": "vision", "source": source, "architecture": "torchvision:resnet18",
              "variants": "listed", "formats": list(formats), "max_batch_size": 8}  # fmt: skip
    return parse_catalog(
        {"models": [family]}, lock=CatalogLock(families={"vision": tuple(names)}, checkpoints=pins)
    )


def test_the_default_catalog_fits_both_stages_time() -> None:
    assert build_time_problem(CATALOG, Settings()) is None


def followed(problem: str | None) -> Settings:
    """The settings a user gets by adding the refusal's `-c key=value` pairs."""
    assert problem is not None
    pairs = re.findall(r"-c (\w+)=(\d+)", problem)
    assert pairs, problem
    return Settings(**{key: int(value) for key, value in pairs})


def test_a_catalog_too_big_for_the_hour_is_refused_with_the_figures_and_what_fits() -> None:
    one = Settings(buildRunners=1)
    problem = build_time_problem(s3_family(1000), one)
    assert problem == (
        "the catalog's build needs about 11.5 h on 1 runner (1,000 archives, estimated from measured seconds "
        "per parameter, docs/deploy.md#build-time), more than buildTimeoutMinutes=30 leaves after 8 min of "
        "set-up; allowed: -c buildRunners=32 (both stages fit; within the account's GPU build quota), or a "
        "first catalog that fits, e.g. its first 32 models, the rest built with `triton-mme build --workers "
        "N` and published with `triton-mme upload`"
    )
    # What it says fits does fit; one more does not; and so do the runners it names, and no fewer.
    assert build_time_problem(s3_family(32), one) is None
    assert build_time_problem(s3_family(33), one) is not None
    assert build_time_problem(s3_family(1000), Settings(buildRunners=32)) is None
    assert "on 31 runners" in str(build_time_problem(s3_family(1000), Settings(buildRunners=31)))


@pytest.mark.parametrize("count", [1000, 10_000])
def test_the_advice_synthesizes_when_followed(count: int) -> None:
    """Both stages at once: the combination named fits the build and the serving check, and the settings
    accept it (their 12-hour wait included)."""
    catalog = s3_family(count)
    problem = build_time_problem(catalog, Settings())
    settings = followed(problem)
    check_build_target(settings, catalog)
    assert build_time_problem(catalog, settings) is None
    if count == 10_000:  # runners alone cannot: the stage timeouts grow with them, within the wait
        assert "-c buildTimeoutMinutes=" in str(problem) and "-c servingCheckTimeoutMinutes=" in str(problem)
        assert settings.build.stage_minutes <= LONG_BUILD_DEADLINE_MINUTES


def test_a_serving_check_bound_catalog_gets_advice_for_both_stages() -> None:
    # Tiny models build in seconds, but each archive's check has its own base time.
    catalog = s3_family(300, parameters=100_000)
    problem = build_time_problem(catalog, Settings(buildRunners=1))
    assert problem is not None and problem.startswith("the catalog's serving check needs about")
    assert "servingCheckTimeoutMinutes=15 leaves" in problem
    check_build_target(followed(problem), catalog)


@pytest.mark.parametrize(("count", "runners"), [(1, 1), (40, 2), (300, 10)])
def test_without_build_runners_synthesis_takes_the_fewest_that_fit(count: int, runners: int) -> None:
    """A few hundred ResNet-18-sized fine-tunes synthesize with no flag, up to AUTO_BUILD_RUNNERS_CAP."""
    catalog = s3_family(count)
    check_build_target(Settings(), catalog)
    resolved = resolve_build_runners(Settings(), catalog)
    assert resolved.build.runners == runners <= AUTO_BUILD_RUNNERS_CAP
    if runners > 1:  # and no fewer would do
        assert build_time_problem(catalog, Settings(buildRunners=runners - 1)) is not None
    # A given buildRunners is kept as given.
    assert resolve_build_runners(Settings(buildRunners=1), catalog).build.runners == 1


def test_past_the_cap_the_default_refuses_and_names_more_runners() -> None:
    problem = build_time_problem(s3_family(400), Settings())
    assert problem is not None and "on 1 runner" in problem and "-c buildRunners=13 " in problem


def test_runners_divide_the_wall_time_and_name_what_fits_on_them() -> None:
    problem = build_time_problem(s3_family(1000), Settings(buildRunners=8))
    assert problem is not None and "needs about 86 min on 8 runners" in problem
    assert "its first 256 models" in problem


def test_synthesis_refuses_a_catalog_too_big_for_the_hour(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"build needs about 11\.5 h on 1 runner \(1,000 archives"):
        check_build_target(Settings(), s3_family(1000))

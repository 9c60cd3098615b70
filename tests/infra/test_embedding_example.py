"""docs/embedding.md's example, exactly as written there, synthesized in a bare cdk.App."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from synth_support import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "embedding.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, Any]:
    from triton_mme_cdk import load_build_catalog

    stack_module, app_module, _ = python_blocks()
    namespace: dict[str, Any] = {"__name__": "embedding_example"}
    exec(compile(stack_module, str(PAGE), "exec"), namespace)
    # The app block's own lines, with the bare app of a test and the repository's catalog.
    assert 'catalog, catalog_files = load_build_catalog(Path("models.yaml"))' in app_module
    assert 'InferenceStack(app, "TeamInference", catalog=catalog, catalog_files=catalog_files)' in app_module
    catalog, catalog_files = load_build_catalog(REPO_ROOT / "models.yaml")
    # No feature flags either: the other app's cdk.json is not this project's.
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("embedding")))
    stack = namespace["InferenceStack"](app, "TeamInference", catalog=catalog, catalog_files=catalog_files)
    return Template.from_stack(stack), stack


def test_the_example_is_the_whole_endpoint_under_its_own_name(example: tuple[Template, Any]) -> None:
    template, _ = example
    template.has_resource_properties("AWS::SageMaker::Endpoint", {"EndpointName": "team-models"})
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"ProductionVariants": [Match.object_like({"InstanceType": "ml.g5.2xlarge"})]},
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget", {"MinCapacity": 2, "MaxCapacity": 4}
    )
    for resource_type in ("AWS::S3::Bucket", "AWS::CodeBuild::Project", "Custom::ModelBuild"):
        assert template.find_resources(resource_type), resource_type


def test_grant_invoke_lets_the_function_call_exactly_this_endpoint(example: tuple[Template, Any]) -> None:
    template, stack = example
    endpoint_id = stack.get_logical_id(stack.node.find_child("Models").cfn_endpoint)
    caller_role = stack.get_logical_id(stack.node.find_child("Caller").role.node.default_child)
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "Roles": [{"Ref": caller_role}],
            "PolicyDocument": {
                "Statement": [
                    {
                        "Action": "sagemaker:InvokeEndpoint",
                        "Effect": "Allow",
                        "Resource": {"Ref": endpoint_id},
                    }
                ]
            },
        },
    )


def test_the_catalog_and_the_runner_files_reach_the_build_source(example: tuple[Template, Any]) -> None:
    _, stack = example
    build = stack.node.find_child("Models").build.runner
    staged = Path(stack.node.root.outdir) / f"asset.{build.source.asset_hash}"
    assert (staged / "models.yaml").read_text() == (REPO_ROOT / "models.yaml").read_text()
    assert (staged / "requirements-build.txt").is_file() and (staged / "triton_mme" / "cli.py").is_file()


def test_the_ten_line_app_with_a_bad_scaling_stops_in_the_props_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from triton_mme_cdk.settings import SettingsError

    *_, app_module = python_blocks()
    assert len([line for line in app_module.splitlines() if line.strip()]) <= 10
    monkeypatch.chdir(REPO_ROOT)  # its catalog path is the repository's
    monkeypatch.setenv("CDK_OUTDIR", str(tmp_path))
    with pytest.raises(ValueError, match=r"allowed: scaling\.min_instance_count >= 2") as raised:
        exec(compile(app_module, str(PAGE), "exec"), {"__name__": "ten_lines"})
    assert isinstance(raised.value, SettingsError)
    assert "updates.strategy=canary" in str(raised.value) and "\n" not in str(raised.value)
    assert not re.search(r"minInstanceCount|deploymentStrategy", str(raised.value))


def test_validate_names_the_props_and_the_construct_adds_nothing_when_it_refuses(tmp_path: Path) -> None:
    from triton_mme_cdk import (
        ScalingSettings,
        TritonMultiModelEndpoint,
        TritonMultiModelEndpointProps,
        load_build_catalog,
        validate,
    )

    catalog, files = load_build_catalog(REPO_ROOT / "models.yaml")
    scaling = ScalingSettings(min_instance_count=1, initial_instance_count=1, max_instance_count=3)
    props = TritonMultiModelEndpointProps(catalog=catalog, catalog_files=files, scaling=scaling)
    with pytest.raises(ValueError, match=r"^updates\.strategy=canary .* scaling\.min_instance_count >= 2"):
        validate(props)
    stack = cdk.Stack(cdk.App(outdir=str(tmp_path)), "Team")
    with pytest.raises(ValueError, match=r"scaling\.min_instance_count >= 2"):
        TritonMultiModelEndpoint(stack, "Mme", props)
    assert not [child for child in stack.node.find_all() if isinstance(child, cdk.CfnResource)]
    # Valid props come back with the build's runners decided (one fits the default catalog), and pass again.
    valid = validate(TritonMultiModelEndpointProps(catalog=catalog, catalog_files=files))
    assert valid.build.runners == 1 and validate(valid) == valid


def test_the_app_names_the_cdk_json_keys_an_embedder_the_props(tmp_path: Path) -> None:
    from triton_mme_cdk import TritonMultiModelEndpointProps, load_build_catalog, validate
    from triton_mme_cdk.composition import compose
    from triton_mme_cdk.settings import BuildRunnerSettings, Settings, SettingsError

    short = BuildRunnerSettings(timeout_minutes=6)  # the default catalog needs longer
    settings = Settings(model_catalog=str(REPO_ROOT / "models.yaml"), build=short)
    with pytest.raises(SettingsError, match=r"more than buildTimeoutMinutes=6 "):
        compose(cdk.App(outdir=str(tmp_path)), settings)
    catalog, files = load_build_catalog(REPO_ROOT / "models.yaml")
    own_props = TritonMultiModelEndpointProps(catalog=catalog, catalog_files=files, build=short)
    with pytest.raises(SettingsError, match=r"more than build\.timeout_minutes=6 "):
        validate(own_props)


@pytest.mark.parametrize(
    ("props_changes", "named", "key"),
    [
        ({"endpoint_name": "team_models"}, r"^endpoint_name=team_models ", "stackName"),
        (
            {"updates": {"deploymentWaitSeconds": 60}},
            r"^updates\.wait_seconds=60 .*alarms\.",
            "deploymentWait",
        ),
    ],
)
def test_every_key_a_rule_names_becomes_the_prop_path(
    props_changes: dict[str, Any], named: str, key: str
) -> None:
    from triton_mme_cdk import TritonMultiModelEndpointProps, UpdatePolicy, load_build_catalog, validate
    from triton_mme_cdk.constructs.multi_model_endpoint_props import checked
    from triton_mme_cdk.settings import SettingsError

    catalog, files = load_build_catalog(REPO_ROOT / "models.yaml")
    if "updates" in props_changes:
        props_changes = {"updates": UpdatePolicy(**props_changes["updates"])}
    props = TritonMultiModelEndpointProps(catalog=catalog, catalog_files=files, **props_changes)
    with pytest.raises(SettingsError, match=named) as raised:
        validate(props)
    assert key not in str(raised.value)
    with pytest.raises(SettingsError, match=key):  # the app's own rules keep its cdk.json keys
        checked(props)

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
    stack_module, app_module = python_blocks()
    namespace: dict[str, Any] = {"__name__": "embedding_example"}
    exec(compile(stack_module, str(PAGE), "exec"), namespace)
    # The app block's own line, with the bare app of a test and the repository's catalog.
    assert 'InferenceStack(app, "TeamInference", catalog=Path("models.yaml"))' in app_module
    # No feature flags either: the other app's cdk.json is not this project's.
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("embedding")))
    stack = namespace["InferenceStack"](app, "TeamInference", catalog=REPO_ROOT / "models.yaml")
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
    build = stack.node.find_child("Models").build_runner
    staged = Path(stack.node.root.outdir) / f"asset.{build.source.asset_hash}"
    assert (staged / "models.yaml").read_text() == (REPO_ROOT / "models.yaml").read_text()
    assert (staged / "requirements-build.txt").is_file() and (staged / "triton_mme" / "cli.py").is_file()


def test_an_embedders_bad_scaling_is_named_as_the_props_name_it(tmp_path: Path) -> None:
    from triton_mme_cdk import ScalingSettings, TritonMultiModelEndpoint, TritonMultiModelEndpointProps
    from triton_mme_cdk.settings import SettingsError

    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Team")
    scaling = ScalingSettings(min_instance_count=1, initial_instance_count=1, max_instance_count=3)
    props = TritonMultiModelEndpointProps(catalog=REPO_ROOT / "models.yaml", scaling=scaling)
    with pytest.raises(ValueError, match=r"allowed: scaling\.min_instance_count >= 2") as raised:
        TritonMultiModelEndpoint(stack, "Mme", props)
    assert isinstance(raised.value, SettingsError)
    assert "updates.strategy=canary" in str(raised.value)
    assert not re.search(r"minInstanceCount|deploymentStrategy", str(raised.value))


def test_the_apps_props_keep_the_cdk_json_keys(tmp_path: Path) -> None:
    from triton_mme_cdk import TritonMultiModelEndpoint, TritonMultiModelEndpointProps
    from triton_mme_cdk.settings import BuildRunnerSettings, Settings, SettingsError

    short = BuildRunnerSettings(timeout_minutes=6)  # the default catalog needs longer
    app_props = TritonMultiModelEndpointProps.from_settings(
        Settings(model_catalog=str(REPO_ROOT / "models.yaml"), build=short)
    )
    own_props = TritonMultiModelEndpointProps(catalog=REPO_ROOT / "models.yaml", build=short)
    app = cdk.App(outdir=str(tmp_path))
    with pytest.raises(SettingsError, match=r"more than buildTimeoutMinutes=6 "):
        TritonMultiModelEndpoint(cdk.Stack(app, "App"), "Mme", app_props)
    with pytest.raises(SettingsError, match=r"more than build\.timeout_minutes=6 "):
        TritonMultiModelEndpoint(cdk.Stack(app, "Embedder"), "Mme", own_props)

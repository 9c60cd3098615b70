"""The stack's AcceptanceSettings output: what `triton-mme acceptance` compares the live endpoint with."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from synth_support import VARIANTS, Synthesized

from triton_mme.acceptance.stack import StackFacts
from triton_mme_cdk.acceptance_settings import ACCEPTANCE_SETTINGS_OUTPUT

SynthWith = Callable[..., Synthesized]


def rendered(synth: Synthesized) -> dict[str, Any]:
    """The output as CloudFormation would resolve it, each reference replaced by `<ref>`."""
    value = synth.template.to_json()["Outputs"][ACCEPTANCE_SETTINGS_OUTPUT]["Value"]
    parts = value["Fn::Join"][1]
    return dict(json.loads("".join(part if isinstance(part, str) else "<ref>" for part in parts)))


def test_the_output_carries_the_settings_the_endpoint_was_made_with(synth_with: SynthWith) -> None:
    synth = synth_with(**VARIANTS["tuned"])  # ml.g5.2xlarge, 3 instances to start, 2 to 8
    settings = synth.stack.settings
    facts = rendered(synth)
    assert facts["instanceType"] == "ml.g5.2xlarge"
    assert facts["initialInstanceCount"] == 3
    assert facts["inferenceAmiVersion"] == settings.endpoint.resolved_inference_ami
    assert facts["networkIsolation"] is settings.endpoint.network_isolation
    assert facts["imageTag"] == settings.endpoint.triton_image_tag
    assert facts["image"].endswith(f"/sagemaker-tritonserver:{settings.endpoint.triton_image_tag}")
    assert facts["buildFingerprint"] == synth.stack.mme.build.serving_check.fingerprint
    assert facts["scaling"]["minCapacity"] == settings.scaling.min_instance_count
    assert facts["scaling"]["maxCapacity"] == 8
    assert facts["scaling"]["resourceId"] == "endpoint/<ref>/variant/AllTraffic"
    assert len(facts["alarmNames"]) == len(synth.stack.mme.monitoring.alarms)


def test_the_deployment_config_is_the_endpoints_own(default_synth: Synthesized) -> None:
    facts = rendered(default_synth)
    endpoint = default_synth.stack.mme.endpoint.endpoint
    properties = default_synth.resources[default_synth.stack.get_logical_id(endpoint)]["Properties"]
    deployed = properties["DeploymentConfig"]["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"]
    recorded = facts["deploymentConfig"]["blueGreenUpdatePolicy"]["trafficRoutingConfiguration"]
    assert recorded["type"] == deployed["Type"] == "CANARY"
    assert recorded["waitIntervalInSeconds"] == deployed["WaitIntervalInSeconds"]


def test_without_scaling_the_output_says_so(synth_with: SynthWith) -> None:
    facts = rendered(synth_with(**VARIANTS["no-scaling-no-isolation"]))
    assert "scaling" not in facts  # CDK leaves out what is None
    parsed = StackFacts.from_outputs({ACCEPTANCE_SETTINGS_OUTPUT: json.dumps(facts)}, stack_name="S")
    assert parsed.settings.scaling is None


def test_the_acceptance_run_reads_the_output_it_gets(default_synth: Synthesized) -> None:
    facts = rendered(default_synth)
    parsed = StackFacts.from_outputs({ACCEPTANCE_SETTINGS_OUTPUT: json.dumps(facts)}, stack_name="S")
    assert parsed.settings.variant_name == "AllTraffic"
    assert parsed.settings.strategy == "CANARY"
    assert parsed.settings.live_manifest_url == "s3://<ref>/manifests/manifest.json"
    assert parsed.settings.model_data_url == "s3://<ref>/models/"


def test_the_deployment_events_are_recorded_before_the_endpoint(default_synth: Synthesized) -> None:
    stack = default_synth.stack
    endpoint = default_synth.resources[stack.get_logical_id(stack.mme.endpoint.endpoint)]
    policy = stack.mme.deployment_events.policy.node.default_child
    assert stack.get_logical_id(policy) in endpoint["DependsOn"]  # type: ignore[arg-type]
    assert rendered(default_synth)["deploymentEventLogGroup"] == "<ref>"


def test_with_dedicated_models_the_output_carries_their_endpoint_and_components(
    synth_with: SynthWith,
) -> None:
    synth = synth_with(**VARIANTS["hybrid-placement"])
    facts = rendered(synth)
    components = facts["inferenceComponents"]
    assert components["variantName"] == "AllTraffic" and components["instanceType"] == "ml.g5.xlarge"
    # resnet50 may scale to zero, so the endpoint may too; one single-GPU instance per copy (3 + 4 at most),
    # and room for both components' updates at once: no whole copy is within 5-50 % of every copy count of
    # either range, so each updates all at once, a second set of copies (3 + 4 more).
    assert components["instanceCounts"] == {"min": 0, "initial": 3, "max": 14}
    assert components["components"]["resnet50"]["copyRange"] == [0, 3]
    assert components["components"]["mobilenet"]["copyCount"] == 2
    assert components["components"]["mobilenet"]["alarmName"] == "<ref>"
    parsed = StackFacts.from_outputs({ACCEPTANCE_SETTINGS_OUTPUT: json.dumps(facts)}, stack_name="S")
    assert parsed.settings.inference_components is not None
    assert parsed.settings.inference_components.components["resnet50"].scaled


def test_without_dedicated_models_the_output_promises_what_it_always_did(default_synth: Synthesized) -> None:
    facts = rendered(default_synth)
    assert "inferenceComponents" not in facts
    parsed = StackFacts.from_outputs({ACCEPTANCE_SETTINGS_OUTPUT: json.dumps(facts)}, stack_name="S")
    assert parsed.settings.inference_components is None

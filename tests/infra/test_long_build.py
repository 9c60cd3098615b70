"""Builds past CloudFormation's hour for a custom resource: the trigger only starts the run, a state machine
follows it and signals a wait condition of this fingerprint, and the endpoint waits on that condition."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from synth_support import Synthesized

from triton_mme_cdk.constructs.model_build_trigger import FINGERPRINT_ID_LENGTH

SynthWith = Callable[..., Synthesized]
LONG_BUILD = {"build_timeout_minutes": 300}
# 2 x 5 queueing + 300 build + 15 check, and the five minutes of margin.
WAIT_MINUTES = 2 * 5 + 300 + 15 + 5


@pytest.fixture(scope="module")
def long_build(synth_with: SynthWith) -> Synthesized:
    return synth_with(**LONG_BUILD)


def _one(synth: Synthesized, resource_type: str) -> tuple[str, dict[str, Any]]:
    (found,) = synth.template.find_resources(resource_type).items()
    return found


def _depends_on(resource: dict[str, Any]) -> list[str]:
    return list(resource.get("DependsOn", []))


def test_stages_within_the_hour_keep_the_custom_resource_as_the_wait(default_synth: Synthesized) -> None:
    assert default_synth.template.find_resources("AWS::CloudFormation::WaitCondition") == {}
    _, trigger = _one(default_synth, "Custom::ModelBuild")
    assert "SignalUrl" not in trigger["Properties"] and "Follower" not in trigger["Properties"]
    assert default_synth.stack.mme.build.follower is None
    trigger_id = default_synth.stack.resolve(
        default_synth.stack.mme.build.resource.node.default_child.logical_id
    )
    _, endpoint = _one(default_synth, "AWS::SageMaker::Endpoint")
    assert trigger_id in _depends_on(endpoint)


def test_the_endpoint_and_the_promotion_wait_on_a_wait_condition_of_this_fingerprint(
    long_build: Synthesized,
) -> None:
    condition_id, condition = _one(long_build, "AWS::CloudFormation::WaitCondition")
    handle_id, _ = _one(long_build, "AWS::CloudFormation::WaitConditionHandle")
    fingerprint = long_build.stack.mme.serving_check.fingerprint
    assert fingerprint[:FINGERPRINT_ID_LENGTH] in condition_id
    assert fingerprint[:FINGERPRINT_ID_LENGTH] in handle_id
    assert condition["Properties"] == {
        "Count": 1,
        "Handle": {"Ref": handle_id},
        "Timeout": str(WAIT_MINUTES * 60),
    }
    _, endpoint = _one(long_build, "AWS::SageMaker::Endpoint")
    assert condition_id in _depends_on(endpoint)
    (promotion,) = long_build.template.find_resources("Custom::ManifestPromotion").values()
    assert condition_id in _depends_on(promotion)


def test_the_trigger_names_the_handle_and_the_follower_and_the_condition_waits_for_the_start(
    long_build: Synthesized,
) -> None:
    trigger_id, trigger = _one(long_build, "Custom::ModelBuild")
    handle_id, _ = _one(long_build, "AWS::CloudFormation::WaitConditionHandle")
    machine_id = long_build.stack.resolve(
        long_build.stack.mme.build.follower.state_machine.node.default_child.logical_id
    )
    properties = trigger["Properties"]
    assert properties["SignalUrl"] == {"Ref": handle_id}
    assert properties["Follower"] == {"Ref": machine_id}
    # The run stops itself two polls before the wait condition gives up, with its own message.
    assert properties["StopAfterSeconds"] == str((WAIT_MINUTES - 2) * 60)
    _, condition = _one(long_build, "AWS::CloudFormation::WaitCondition")
    assert trigger_id in _depends_on(condition)
    # The custom resource itself still answers within the hour: it only starts the run.
    assert properties["ServiceTimeout"] == "3600" or trigger.get("Properties", {}).get("ServiceTimeout") in (
        3600,
        "3600",
    )


def test_the_follower_polls_is_complete_and_signals_both_outcomes_within_the_wait(
    long_build: Synthesized,
) -> None:
    machine = long_build.stack.mme.build.follower.state_machine
    machine_id = long_build.stack.resolve(machine.node.default_child.logical_id)
    resource = long_build.resources[machine_id]["Properties"]
    definition = json.loads(
        "".join(
            part if isinstance(part, str) else "<ref>" for part in resource["DefinitionString"]["Fn::Join"][1]
        )
    )
    assert definition["TimeoutSeconds"] == WAIT_MINUTES * 60
    states = definition["States"]
    assert set(states) == {"Poll", "Follow", "Ended", "SignalSuccess", "SignalFailure"}
    assert states["Poll"]["Seconds"] == 60 and states["Poll"]["Next"] == "Follow"
    assert states["Follow"]["Catch"][0]["Next"] == "SignalFailure"
    assert states["Ended"]["Default"] == "Poll"
    assert states["Ended"]["Choices"][0]["Next"] == "SignalSuccess"
    assert resource["TracingConfiguration"] == {"Enabled": True}
    assert resource["LoggingConfiguration"]["Level"] == "ALL"


def test_only_the_on_event_handler_may_start_the_follower(long_build: Synthesized) -> None:
    machine_id = long_build.stack.resolve(
        long_build.stack.mme.build.follower.state_machine.node.default_child.logical_id
    )
    starters = []
    for policy in long_build.template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if "states:StartExecution" in actions and statement["Resource"] == {"Ref": machine_id}:
                starters += [role["Ref"] for role in policy["Properties"]["Roles"]]
    (starter,) = starters
    assert starter.startswith("ModelBuildTriggerOnEventRole")

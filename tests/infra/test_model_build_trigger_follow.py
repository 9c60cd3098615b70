"""The build trigger past CloudFormation's hour (botocore Stubber, a captured signal): on-event starts the run
and its follower, the resource completes at once, and the wait condition learns every outcome."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.stub import Stubber
from test_model_build_trigger import (
    BUILD_ID,
    FINGERPRINT,
    NOW,
    PROJECT,
    STOP_AFTER,
    build,
    clock,  # noqa: F401 (its clock is fixed here too)
    expect_no_earlier_build,
    expect_start,
    properties,
)

from triton_mme_cdk.constructs.model_build_trigger_handler import handler

SIGNAL_URL = (
    "https://cloudformation-waitcondition-eu-west-1.s3.eu-west-1.amazonaws.com/arn%3Ahandle?X-Amz-Signature=s"
)
FOLLOWER = "arn:aws:states:eu-west-1:123456789012:stateMachine:Follower"
EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:Follower:run-1"


class Signals:
    """Every request the handler sends to a wait condition's URL."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict[str, str], dict[str, Any]]] = []

    def urlopen(self, request: Any, timeout: float) -> Any:
        headers = {name.lower(): value for name, value in request.header_items()}
        self.sent.append((request.get_method(), request.full_url, headers, json.loads(request.data)))

        class Answer:
            def __enter__(self) -> Answer:
                return self

            def __exit__(self, *_: Any) -> None:
                return None

            def read(self) -> bytes:
                return b""

        return Answer()


@pytest.fixture
def signals(monkeypatch: pytest.MonkeyPatch) -> Signals:
    captured = Signals()
    monkeypatch.setattr(handler.urllib.request, "urlopen", captured.urlopen)
    return captured


def long_properties(signal_url: str = SIGNAL_URL) -> dict[str, Any]:
    return {**properties(), "SignalUrl": signal_url, "Follower": FOLLOWER}


def test_create_starts_the_run_and_its_follower_with_the_run_and_the_signal_url(
    codebuild: Stubber, stepfunctions: Stubber, signals: Signals
) -> None:
    expect_no_earlier_build(codebuild)
    expect_start(codebuild)
    data = {"BuildId": BUILD_ID, "Started": "true", "StopAt": str(int(NOW) + STOP_AFTER)}
    stepfunctions.add_response(
        "start_execution",
        {"executionArn": EXECUTION, "startDate": NOW},
        {
            "stateMachineArn": FOLLOWER,
            "input": json.dumps(
                {"ResourceProperties": long_properties(), "Data": data, "SignalUrl": SIGNAL_URL}
            ),
        },
    )

    response = handler.on_event({"RequestType": "Create", "ResourceProperties": long_properties()})

    assert response["Data"] == {**data, handler.FOLLOWED_BY: EXECUTION}
    assert signals.sent == []
    # The resource completes at once: CloudFormation's hour does not bound the run.
    assert handler.is_complete(
        {"RequestType": "Create", "ResourceProperties": long_properties(), **response}
    ) == {"IsComplete": True}


def test_the_follower_s_own_poll_follows_the_run(codebuild: Stubber) -> None:
    # The follower passes the run's data without the mark, so is-complete follows the stages as before.
    codebuild.add_response("batch_get_builds", {"builds": [build("IN_PROGRESS")]}, {"ids": [BUILD_ID]})
    data = {"BuildId": BUILD_ID, "Started": "true", "StopAt": str(int(NOW) + STOP_AFTER)}
    assert handler.is_complete(
        {"RequestType": "Create", "ResourceProperties": long_properties(), "Data": data}
    ) == {"IsComplete": False}


def test_a_fingerprint_built_before_signals_success_at_once(codebuild: Stubber, signals: Signals) -> None:
    expect_no_earlier_build(codebuild, ids=[BUILD_ID])
    codebuild.add_response("batch_get_builds", {"builds": [build("SUCCEEDED")]}, {"ids": [BUILD_ID]})

    response = handler.on_event(
        {
            "RequestType": "Update",
            "PhysicalResourceId": "p",
            "ResourceProperties": long_properties(),
            "OldResourceProperties": {"Fingerprint": "c" * 64},
        }
    )

    assert response["Data"] == {"BuildId": BUILD_ID, "Started": "false"}
    ((method, url, headers, body),) = signals.sent
    assert (method, url) == ("PUT", SIGNAL_URL)
    # The pre-signed URL is signed without a content type: the request must send an empty one.
    assert headers["content-type"] == ""
    assert body == {
        "Status": "SUCCESS",
        "Reason": f"built before by {BUILD_ID}",
        "UniqueId": "model-build",
        "Data": "SUCCESS",
    }


@pytest.mark.parametrize(("old_url", "signalled"), [("https://older-handle", 1), (SIGNAL_URL, 0), (None, 1)])
def test_an_unchanged_fingerprint_signals_only_a_new_wait_condition(
    codebuild: Stubber, signals: Signals, old_url: str | None, signalled: int
) -> None:
    old = {"ProjectName": PROJECT, "Fingerprint": FINGERPRINT} | ({"SignalUrl": old_url} if old_url else {})
    response = handler.on_event(
        {"RequestType": "Update", "PhysicalResourceId": "kept", "ResourceProperties": long_properties(),
         "OldResourceProperties": old}
    )  # fmt: skip
    assert response["Data"]["Started"] == "false"
    assert len(signals.sent) == signalled
    assert all(body["Status"] == "SUCCESS" for *_, body in signals.sent)


def test_a_failed_run_signals_failure_with_the_stage_s_own_message(signals: Signals) -> None:
    message = (
        f"model build {BUILD_ID} failed: 1 of 2 archives failed; first: tiny/onnx: parity; logs: https://x"
    )
    cause = json.dumps({"errorMessage": message, "errorType": "ModelBuildFailed", "stackTrace": ["..."]})

    answer = handler.signal(
        {"SignalUrl": SIGNAL_URL, "Status": "FAILURE", "Error": {"Error": "ModelBuildFailed", "Cause": cause}}
    )

    assert answer == {"Status": "FAILURE", "Reason": message}
    ((_, _, _, body),) = signals.sent
    assert body["Status"] == "FAILURE" and body["Reason"] == message


def test_a_failure_without_a_message_still_says_what_failed_and_long_reasons_are_cut(
    signals: Signals,
) -> None:
    handler.signal(
        {"SignalUrl": SIGNAL_URL, "Status": "FAILURE", "Error": {"Error": "States.Timeout", "Cause": ""}}
    )
    handler.signal(
        {"SignalUrl": SIGNAL_URL, "Status": "FAILURE", "Error": {"Error": "X", "Cause": "y" * 5000}}
    )
    assert signals.sent[0][3]["Reason"] == "States.Timeout"
    assert len(signals.sent[1][3]["Reason"]) == handler.MAX_REASON


def test_success_signals_success(signals: Signals) -> None:
    assert handler.signal({"SignalUrl": SIGNAL_URL, "Status": "SUCCESS"})["Status"] == "SUCCESS"
    assert signals.sent[0][3]["Status"] == "SUCCESS"

"""The build trigger's handlers against CodeBuild's real API shapes (botocore Stubber), offline: a build
starts once per fingerprint, and never outlives the deployment that started it."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from triton_mme_cdk.constructs.model_build_trigger_handler import handler

PROJECT = "ModelBuildProject"
BUILD_ID = f"{PROJECT}:0b7c5a4e-1111-2222-3333-444455556666"
FINGERPRINT = "a" * 64
NEWER = "b" * 64
STOP_AFTER = 3480
NOW = 1_700_000_000.0
LOG_LINK = "https://console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logEvent:group=/build;stream=x"


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [NOW]
    monkeypatch.setattr(handler.time, "time", lambda: now[0])
    return now


def properties(fingerprint: str = FINGERPRINT) -> dict[str, Any]:
    return {
        "ServiceToken": "arn",
        "ProjectName": PROJECT,
        "Fingerprint": fingerprint,
        "StopAfterSeconds": str(STOP_AFTER),
    }


def event(request: str, fingerprint: str = FINGERPRINT, **extra: Any) -> dict[str, Any]:
    return {"RequestType": request, "ResourceProperties": properties(fingerprint), **extra}


def build(
    status: str, *, fingerprint: str = FINGERPRINT, build_id: str = BUILD_ID, **extra: Any
) -> dict[str, Any]:
    return {
        "id": build_id,
        "buildStatus": status,
        "environment": {
            "type": "LINUX_GPU_CONTAINER",
            "image": "image",
            "computeType": "BUILD_GENERAL1_SMALL",
            "environmentVariables": [{"name": handler.FINGERPRINT_VARIABLE, "value": fingerprint}],
        },
        "logs": {"deepLink": LOG_LINK},
        **extra,
    }


def expect_no_earlier_build(stubber: Stubber, ids: list[str] | None = None) -> None:
    stubber.add_response(
        "list_builds_for_project",
        {"ids": ids} if ids else {},
        {"projectName": PROJECT, "sortOrder": "DESCENDING"},
    )


def expect_start(stubber: Stubber) -> None:
    stubber.add_response(
        "start_build",
        {"build": build("IN_PROGRESS")},
        {
            "projectName": PROJECT,
            "environmentVariablesOverride": [
                {"name": handler.FINGERPRINT_VARIABLE, "value": FINGERPRINT, "type": "PLAINTEXT"}
            ],
        },
    )


def started(build_id: str = BUILD_ID) -> dict[str, Any]:
    return {
        "RequestType": "Create",
        "PhysicalResourceId": "x",
        "ResourceProperties": properties(),
        "Data": {"BuildId": build_id, "Started": "true", "StopAt": str(int(NOW) + STOP_AFTER)},
    }


def test_create_starts_one_build_and_tags_it_with_the_fingerprint(codebuild: Stubber) -> None:
    expect_no_earlier_build(codebuild)
    expect_start(codebuild)

    response = handler.on_event(event("Create"))

    # It is stopped at the latest StopAfterSeconds after it was started.
    assert response["Data"] == {"BuildId": BUILD_ID, "Started": "true", "StopAt": str(int(NOW) + STOP_AFTER)}
    assert response["PhysicalResourceId"] == f"{PROJECT}:{FINGERPRINT}"


def test_changed_fingerprint_on_update_starts_a_build(codebuild: Stubber) -> None:
    older = "b" * 64
    expect_no_earlier_build(codebuild, ids=["old-build"])
    codebuild.add_response(
        "batch_get_builds", {"builds": [build("SUCCEEDED", fingerprint=older)]}, {"ids": ["old-build"]}
    )
    expect_start(codebuild)

    response = handler.on_event(
        event(
            "Update",
            PhysicalResourceId=f"{PROJECT}:{older}",
            OldResourceProperties={"ProjectName": PROJECT, "Fingerprint": older},
        )
    )

    assert response["Data"]["Started"] == "true"
    assert response["PhysicalResourceId"] == f"{PROJECT}:{FINGERPRINT}"


def test_update_with_an_unchanged_fingerprint_starts_nothing(codebuild: Stubber) -> None:
    response = handler.on_event(
        event(
            "Update",
            PhysicalResourceId="kept",
            OldResourceProperties={"ProjectName": PROJECT, "Fingerprint": FINGERPRINT, "Other": "changed"},
        )
    )

    assert response["PhysicalResourceId"] == "kept"
    assert response["Data"]["Started"] == "false"
    assert handler.is_complete({**event("Update"), **response}) == {"IsComplete": True}


def test_a_fingerprint_that_already_built_successfully_is_not_rebuilt(codebuild: Stubber) -> None:
    # E.g. the rollback of a failed update returns to the previous, already-built fingerprint.
    expect_no_earlier_build(codebuild, ids=[BUILD_ID])
    codebuild.add_response("batch_get_builds", {"builds": [build("SUCCEEDED")]}, {"ids": [BUILD_ID]})

    response = handler.on_event(
        event("Update", PhysicalResourceId="p", OldResourceProperties={"Fingerprint": "c" * 64})
    )

    assert response["Data"] == {"BuildId": BUILD_ID, "Started": "false"}


def test_an_earlier_failed_build_of_the_same_fingerprint_is_retried(codebuild: Stubber) -> None:
    expect_no_earlier_build(codebuild, ids=[BUILD_ID])
    codebuild.add_response("batch_get_builds", {"builds": [build("FAILED")]}, {"ids": [BUILD_ID]})
    expect_start(codebuild)

    assert handler.on_event(event("Create"))["Data"]["Started"] == "true"


def test_in_progress_build_is_not_complete(codebuild: Stubber) -> None:
    codebuild.add_response("batch_get_builds", {"builds": [build("IN_PROGRESS")]}, {"ids": [BUILD_ID]})

    assert handler.is_complete(started()) == {"IsComplete": False}


def test_succeeded_build_completes_the_resource(codebuild: Stubber) -> None:
    codebuild.add_response("batch_get_builds", {"builds": [build("SUCCEEDED")]}, {"ids": [BUILD_ID]})

    assert handler.is_complete(started()) == {
        "IsComplete": True,
        "Data": {"BuildId": BUILD_ID, "LastBuildId": BUILD_ID},
    }


@pytest.mark.parametrize(
    ("status", "words"),
    [("FAILED", "failed"), ("STOPPED", "stopped"), ("TIMED_OUT", "timed out"), ("FAULT", "fault")],
)
def test_unsuccessful_build_fails_with_its_id_and_log_link(
    codebuild: Stubber, status: str, words: str
) -> None:
    phases = [
        {"phaseType": "INSTALL", "phaseStatus": "SUCCEEDED"},
        {
            "phaseType": "BUILD",
            "phaseStatus": status,
            "contexts": [
                {"statusCode": "COMMAND_EXECUTION_ERROR", "message": "Error while executing\ncommand"}
            ],
        },
    ]
    codebuild.add_response(
        "batch_get_builds", {"builds": [build(status, phases=phases)]}, {"ids": [BUILD_ID]}
    )

    with pytest.raises(handler.ModelBuildFailed) as failure:
        handler.is_complete(started())

    message = str(failure.value)
    assert (
        message == f"model build {BUILD_ID} {words} in phase BUILD: Error while executing; logs: {LOG_LINK}"
    )
    assert "\n" not in message


def test_failure_without_a_deep_link_points_to_the_build_console(
    codebuild: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    failed = build("FAILED")
    del failed["logs"]
    codebuild.add_response("batch_get_builds", {"builds": [failed]}, {"ids": [BUILD_ID]})

    with pytest.raises(handler.ModelBuildFailed) as failure:
        handler.is_complete(started())

    console = "https://eu-west-1.console.aws.amazon.com/codesuite/codebuild/projects/ModelBuildProject/build/"
    assert str(failure.value).endswith(
        f"logs: {console}ModelBuildProject%3A0b7c5a4e-1111-2222-3333-444455556666/log?region=eu-west-1"
    )


def test_a_vanished_build_fails_clearly(codebuild: Stubber) -> None:
    codebuild.add_response(
        "batch_get_builds", {"builds": [], "buildsNotFound": [BUILD_ID]}, {"ids": [BUILD_ID]}
    )

    with pytest.raises(handler.ModelBuildFailed, match=f"model build {BUILD_ID} not found"):
        handler.is_complete(started())


def test_a_delete_without_a_build_fingerprint_calls_nothing(codebuild: Stubber) -> None:
    delete = event("Delete", PhysicalResourceId="p")

    assert handler.on_event(delete) == {"PhysicalResourceId": "p", "Data": {"StoppedBuilds": ""}}
    assert handler.is_complete(delete) == {"IsComplete": True}


def test_delete_succeeds_even_with_broken_properties() -> None:
    delete = {"RequestType": "Delete", "PhysicalResourceId": "p", "ResourceProperties": {}}

    assert handler.on_event(delete)["PhysicalResourceId"] == "p"
    assert handler.is_complete(delete) == {"IsComplete": True}


# ----- a build never outlives the deployment that started it ---------------------------------------------

OTHER_ID = f"{PROJECT}:99999999-1111-2222-3333-444455556666"


def recent_builds(stubber: Stubber, *builds: dict[str, Any]) -> None:
    ids = [b["id"] for b in builds]
    stubber.add_response(
        "list_builds_for_project", {"ids": ids}, {"projectName": PROJECT, "sortOrder": "DESCENDING"}
    )
    stubber.add_response("batch_get_builds", {"builds": list(builds)}, {"ids": ids})


def expect_stop(stubber: Stubber, build_id: str = BUILD_ID) -> None:
    stubber.add_response("stop_build", {"build": build("STOPPED", build_id=build_id)}, {"id": build_id})


def test_delete_stops_the_running_build_of_its_fingerprint_and_waits_until_it_has_stopped(
    codebuild: Stubber,
) -> None:
    # E.g. the Delete CloudFormation sends after the create failed or timed out while the build still runs.
    recent_builds(codebuild, build("IN_PROGRESS"), build("IN_PROGRESS", fingerprint=NEWER, build_id=OTHER_ID))
    expect_stop(codebuild)
    delete = event("Delete", PhysicalResourceId=f"{PROJECT}:{FINGERPRINT}")

    response = handler.on_event(delete)

    assert response == {"PhysicalResourceId": f"{PROJECT}:{FINGERPRINT}", "Data": {"StoppedBuilds": BUILD_ID}}
    waiting = {**delete, **response}
    codebuild.add_response("batch_get_builds", {"builds": [build("IN_PROGRESS")]}, {"ids": [BUILD_ID]})
    assert handler.is_complete(waiting) == {"IsComplete": False}
    codebuild.add_response("batch_get_builds", {"builds": [build("STOPPED")]}, {"ids": [BUILD_ID]})
    assert handler.is_complete(waiting) == {"IsComplete": True}


def test_delete_of_a_finished_build_stops_nothing(codebuild: Stubber) -> None:
    recent_builds(codebuild, build("SUCCEEDED"))
    delete = event("Delete", PhysicalResourceId=f"{PROJECT}:{FINGERPRINT}")

    response = handler.on_event(delete)

    assert response["Data"] == {"StoppedBuilds": ""}
    assert handler.is_complete({**delete, **response}) == {"IsComplete": True}


def test_a_rollback_stops_the_newer_build_and_returns_to_the_built_fingerprint(codebuild: Stubber) -> None:
    # The update to NEWER failed elsewhere while its build ran; CloudFormation updates back to FINGERPRINT.
    recent_builds(
        codebuild,
        build("IN_PROGRESS", fingerprint=NEWER, build_id=OTHER_ID),
        build("SUCCEEDED", build_id=BUILD_ID),
    )
    expect_stop(codebuild, OTHER_ID)

    response = handler.on_event(
        event("Update", PhysicalResourceId=f"{PROJECT}:{NEWER}", OldResourceProperties=properties(NEWER))
    )

    assert response["PhysicalResourceId"] == f"{PROJECT}:{FINGERPRINT}"
    assert response["Data"] == {"BuildId": BUILD_ID, "Started": "false"}


def test_is_complete_stops_a_build_that_outlives_its_time_and_fails_the_resource(
    codebuild: Stubber, clock: list[float]
) -> None:
    clock[0] = NOW + STOP_AFTER - 60
    codebuild.add_response("batch_get_builds", {"builds": [build("IN_PROGRESS")]}, {"ids": [BUILD_ID]})
    assert handler.is_complete(started()) == {"IsComplete": False}

    clock[0] = NOW + STOP_AFTER
    codebuild.add_response("batch_get_builds", {"builds": [build("IN_PROGRESS")]}, {"ids": [BUILD_ID]})
    expect_stop(codebuild)
    with pytest.raises(handler.ModelBuildFailed) as failure:
        handler.is_complete(started())

    assert str(failure.value) == (
        f"model build {BUILD_ID} was still running when the deployment's time for it ran out; stopped it "
        "(lower buildTimeoutMinutes, servingCheckTimeoutMinutes and buildQueueTimeoutMinutes, or raise "
        f"buildRunners); logs: {LOG_LINK}"
    )


def test_the_fingerprint_variable_is_the_one_the_buildspec_publishes_under() -> None:
    from triton_mme_cdk.constructs.build_spec import FINGERPRINT_VARIABLE, build_spec

    assert handler.FINGERPRINT_VARIABLE == FINGERPRINT_VARIABLE
    (staging,) = [
        c for c in build_spec(tensorrt=False)["phases"]["build"]["commands"] if "stage-candidate" in c
    ]
    assert f'--fingerprint "${FINGERPRINT_VARIABLE}"' in staging


# ----- two stages: the build, then the serving check in the endpoint's own image ----------------------------

CHECK = "ServingCheckProject"
CHECK_ID = f"{CHECK}:77777777-1111-2222-3333-444455556666"
CANDIDATE = "c" * 64
STAGES = [{"Name": "model build", "Project": PROJECT}, {"Name": "serving check", "Project": CHECK}]
CHECK_LOGS = {"groupName": "/check", "streamName": "77777777", "deepLink": LOG_LINK}


def two_stages(event: dict[str, Any]) -> dict[str, Any]:
    properties = {k: v for k, v in event["ResourceProperties"].items() if k != "ProjectName"}
    return {**event, "ResourceProperties": {**properties, "Stages": STAGES}}


def built_with_candidate() -> dict[str, Any]:
    return build(
        "SUCCEEDED",
        exportedEnvironmentVariables=[{"name": "CANDIDATE_MANIFEST_SHA256", "value": CANDIDATE}],
    )


def check_build(status: str, **extra: Any) -> dict[str, Any]:
    checked = build(status, build_id=CHECK_ID, **extra)
    checked["environment"]["environmentVariables"].append({"name": "MODEL_BUILD_ID", "value": BUILD_ID})
    return checked


def check_builds(stubber: Stubber, *builds: dict[str, Any]) -> None:
    ids = [b["id"] for b in builds]
    stubber.add_response(
        "list_builds_for_project",
        {"ids": ids} if ids else {},
        {"projectName": CHECK, "sortOrder": "DESCENDING"},
    )
    if ids:
        stubber.add_response("batch_get_builds", {"builds": list(builds)}, {"ids": ids})


def test_after_the_build_the_check_starts_with_the_fingerprint_the_build_id_and_the_candidate(
    codebuild: Stubber,
) -> None:
    codebuild.add_response("batch_get_builds", {"builds": [built_with_candidate()]}, {"ids": [BUILD_ID]})
    check_builds(codebuild)
    codebuild.add_response(
        "start_build",
        {"build": check_build("IN_PROGRESS")},
        {
            "projectName": CHECK,
            "environmentVariablesOverride": [
                {"name": "MODEL_BUILD_FINGERPRINT", "value": FINGERPRINT, "type": "PLAINTEXT"},
                {"name": "MODEL_BUILD_ID", "value": BUILD_ID, "type": "PLAINTEXT"},
                {"name": "CANDIDATE_MANIFEST_SHA256", "value": CANDIDATE, "type": "PLAINTEXT"},
            ],
        },
    )

    assert handler.is_complete(two_stages(started())) == {"IsComplete": False}


def test_the_resource_completes_only_when_the_check_succeeded(codebuild: Stubber) -> None:
    for status, complete in (("IN_PROGRESS", False), ("SUCCEEDED", True)):
        codebuild.add_response("batch_get_builds", {"builds": [built_with_candidate()]}, {"ids": [BUILD_ID]})
        check_builds(codebuild, check_build(status))
        assert handler.is_complete(two_stages(started()))["IsComplete"] is complete


def test_a_failed_check_fails_the_deployment_with_the_archive_and_tritons_first_error_line(
    codebuild: Stubber, logs: Stubber
) -> None:
    codebuild.add_response("batch_get_builds", {"builds": [built_with_candidate()]}, {"ids": [BUILD_ID]})
    check_builds(codebuild, check_build("FAILED", logs=CHECK_LOGS))
    line = (
        "serving check failed: resnet50-onnx-0123456789abcdef.tar.gz: Triton did not load it: load failed "
        "for model 'resnet50-onnx-0123456789abcdef.tar.gz': version 1 is at UNAVAILABLE state "
        "(1 of 3 archives failed)"
    )
    logs.add_response(
        "filter_log_events",
        {"events": [{"message": "[Container] Running command python3 -m triton_mme serving-check (error:)"},
                    {"message": f"error: {line}\n"}]},
        {"logGroupName": "/check", "logStreamNames": ["77777777"], "filterPattern": '"error:"'},
    )  # fmt: skip

    with pytest.raises(handler.ModelBuildFailed) as failure:
        handler.is_complete(two_stages(started()))

    assert str(failure.value) == f"serving check {CHECK_ID} failed: {line}; logs: {LOG_LINK}"


def test_a_build_that_fails_never_starts_the_check(codebuild: Stubber) -> None:
    codebuild.add_response("batch_get_builds", {"builds": [build("FAILED")]}, {"ids": [BUILD_ID]})
    with pytest.raises(handler.ModelBuildFailed, match=f"^model build {BUILD_ID} failed"):
        handler.is_complete(two_stages(started()))


def test_the_deadline_stops_the_running_check(codebuild: Stubber, clock: list[float]) -> None:
    clock[0] = NOW + STOP_AFTER
    codebuild.add_response("batch_get_builds", {"builds": [built_with_candidate()]}, {"ids": [BUILD_ID]})
    check_builds(codebuild, check_build("IN_PROGRESS"))
    expect_stop(codebuild, CHECK_ID)
    with pytest.raises(handler.ModelBuildFailed, match=f"^serving check {CHECK_ID} was still running"):
        handler.is_complete(two_stages(started()))


def test_a_fingerprint_counts_as_built_only_once_its_check_succeeded(codebuild: Stubber) -> None:
    # The build of this fingerprint succeeded before, but its check failed: build again.
    recent_builds(codebuild, build("SUCCEEDED"))
    check_builds(codebuild, check_build("FAILED"))
    expect_start(codebuild)
    assert handler.on_event(two_stages(event("Create")))["Data"]["Started"] == "true"


def test_delete_stops_the_running_check_of_its_fingerprint(codebuild: Stubber) -> None:
    recent_builds(codebuild, build("SUCCEEDED"))
    check_builds(codebuild, check_build("IN_PROGRESS"))
    expect_stop(codebuild, CHECK_ID)
    delete = two_stages(event("Delete", PhysicalResourceId=f"{PROJECT}:{FINGERPRINT}"))
    assert handler.on_event(delete)["Data"] == {"StoppedBuilds": CHECK_ID}

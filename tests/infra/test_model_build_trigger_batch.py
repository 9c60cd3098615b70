"""The build trigger with fanned-out stages (`buildRunners` > 1): each stage a CodeBuild batch build, against
CodeBuild's real API shapes (botocore Stubber), offline."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from triton_mme_cdk.constructs.build_spec import CANDIDATE_VARIABLE
from triton_mme_cdk.constructs.model_build_trigger_handler import handler

BUILD = "ModelBuildProject"
CHECK = "ServingCheckProject"
BATCH_ID = f"{BUILD}:0b7c5a4e-1111-2222-3333-444455556666"
CHECK_BATCH_ID = f"{CHECK}:77777777-1111-2222-3333-444455556666"
FIRST = handler.BATCH_MARK + BATCH_ID
FINGERPRINT = "a" * 64
STOP_AFTER = 3480
NOW = 1_700_000_000.0
STAGES = [
    {"Name": "model build", "Project": BUILD, "Batch": "true"},
    {"Name": "serving check", "Project": CHECK, "Batch": "true"},
]
DIGESTS = ["d" * 64, "e" * 64]
LINK = "https://console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logEvent:group=/build;stream=s1"


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handler.time, "time", lambda: NOW)


def variables(**values: str) -> list[dict[str, str]]:
    return [{"name": name, "value": value, "type": "PLAINTEXT"} for name, value in values.items()]


def batch(status: str, batch_id: str = BATCH_ID, *, groups: list[dict[str, Any]] | None = None,
          first: str | None = None) -> dict[str, Any]:  # fmt: skip
    environment = [{"name": handler.FINGERPRINT_VARIABLE, "value": FINGERPRINT}]
    if first:
        environment.append({"name": handler.FIRST_BUILD_VARIABLE, "value": first})
    return {
        "id": batch_id,
        "buildBatchStatus": status,
        "environment": {
            "type": "LINUX_GPU_CONTAINER",
            "image": "i",
            "computeType": "BUILD_GENERAL1_SMALL",
            "environmentVariables": environment,
        },
        "buildGroups": groups or [],
    }


def shard(index: int, status: str, project: str = BUILD) -> dict[str, Any]:
    build_id = f"{project}:shard-{index}"
    arn = f"arn:aws:codebuild:eu-west-1:123456789012:build/{build_id}"
    return {"identifier": f"shard_{index}", "currentBuildSummary": {"arn": arn, "buildStatus": status}}


def shard_build(index: int, status: str, **extra: Any) -> dict[str, Any]:
    return {"id": f"{BUILD}:shard-{index}", "buildStatus": status, **extra}


def event(request: str, **extra: Any) -> dict[str, Any]:
    properties = {"ServiceToken": "arn", "Stages": STAGES, "Fingerprint": FINGERPRINT,
                  "StopAfterSeconds": str(STOP_AFTER)}  # fmt: skip
    return {"RequestType": request, "ResourceProperties": properties, **extra}


def started() -> dict[str, Any]:
    data = {"BuildId": FIRST, "Started": "true", "StopAt": str(int(NOW) + STOP_AFTER)}
    return event("Create", PhysicalResourceId="x", Data=data)


def no_batches(stubber: Stubber, project: str) -> None:
    stubber.add_response(
        "list_build_batches_for_project", {"ids": []}, {"projectName": project, "sortOrder": "DESCENDING"}
    )


def test_create_starts_the_build_as_one_batch_tagged_with_the_fingerprint(codebuild: Stubber) -> None:
    no_batches(codebuild, BUILD)
    no_batches(codebuild, CHECK)
    codebuild.add_response(
        "start_build_batch",
        {"buildBatch": batch("IN_PROGRESS")},
        {
            "projectName": BUILD,
            "environmentVariablesOverride": variables(MODEL_BUILD_FINGERPRINT=FINGERPRINT),
        },
    )
    result = handler.on_event(event("Create"))
    assert result["Data"]["BuildId"] == FIRST and result["Data"]["Started"] == "true"


def test_after_the_build_batch_the_check_batch_gets_every_shards_candidate_in_shard_order(
    codebuild: Stubber,
) -> None:
    groups = [shard(1, "SUCCEEDED"), shard(0, "SUCCEEDED")]
    codebuild.add_response("batch_get_build_batches", {"buildBatches": [batch("SUCCEEDED", groups=groups)]},
                           {"ids": [BATCH_ID]})  # fmt: skip
    no_batches(codebuild, CHECK)
    exported = [
        shard_build(
            i, "SUCCEEDED", exportedEnvironmentVariables=[{"name": CANDIDATE_VARIABLE, "value": DIGESTS[i]}]
        )
        for i in (0, 1)
    ]
    codebuild.add_response(
        "batch_get_builds", {"builds": exported}, {"ids": [f"{BUILD}:shard-0", f"{BUILD}:shard-1"]}
    )
    codebuild.add_response(
        "start_build_batch",
        {"buildBatch": batch("IN_PROGRESS", CHECK_BATCH_ID, first=FIRST)},
        {"projectName": CHECK, "environmentVariablesOverride": variables(
            MODEL_BUILD_FINGERPRINT=FINGERPRINT, MODEL_BUILD_ID=FIRST, CANDIDATE_SHARDS=",".join(DIGESTS))},
    )  # fmt: skip
    assert handler.is_complete(started()) == {"IsComplete": False}


def test_the_resource_completes_when_the_check_batch_succeeded(codebuild: Stubber) -> None:
    codebuild.add_response(
        "batch_get_build_batches", {"buildBatches": [batch("SUCCEEDED")]}, {"ids": [BATCH_ID]}
    )
    codebuild.add_response("list_build_batches_for_project", {"ids": [CHECK_BATCH_ID]},
                           {"projectName": CHECK, "sortOrder": "DESCENDING"})  # fmt: skip
    codebuild.add_response("batch_get_build_batches",
                           {"buildBatches": [batch("SUCCEEDED", CHECK_BATCH_ID, first=FIRST)]},
                           {"ids": [CHECK_BATCH_ID]})  # fmt: skip
    result = handler.is_complete(started())
    assert result["IsComplete"] is True
    assert result["Data"]["LastBuildId"] == handler.BATCH_MARK + CHECK_BATCH_ID


def test_a_failed_shard_fails_the_deployment_with_its_own_error_line_and_log_link(
    codebuild: Stubber, logs: Stubber
) -> None:
    groups = [shard(0, "SUCCEEDED"), shard(1, "FAILED")]
    codebuild.add_response("batch_get_build_batches", {"buildBatches": [batch("FAILED", groups=groups)]},
                           {"ids": [BATCH_ID]})  # fmt: skip
    failed = shard_build(1, "FAILED", logs={"groupName": "/build", "streamName": "s1", "deepLink": LINK})
    codebuild.add_response("batch_get_builds", {"builds": [failed]}, {"ids": [f"{BUILD}:shard-1"]})
    line = "error: 1 of 40 archives failed; first: vision-c0033/onnx: cannot load the model: bad checkpoint"
    query = {"logGroupName": "/build", "logStreamNames": ["s1"], "filterPattern": '"error:"'}
    logs.add_response("filter_log_events", {"events": [{"message": line}]}, query)
    with pytest.raises(handler.ModelBuildFailed) as error:
        handler.is_complete(started())
    assert str(error.value) == (
        f"model build {FIRST} failed: shard_1 {BUILD}:shard-1: 1 of 40 archives failed; first: "
        f"vision-c0033/onnx: cannot load the model: bad checkpoint; logs: {LINK}"
    )


def test_a_batch_that_outlives_its_time_is_stopped(
    codebuild: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handler.time, "time", lambda: NOW + STOP_AFTER + 1)
    codebuild.add_response(
        "batch_get_build_batches", {"buildBatches": [batch("IN_PROGRESS")]}, {"ids": [BATCH_ID]}
    )
    codebuild.add_response("stop_build_batch", {"buildBatch": batch("STOPPED")}, {"id": BATCH_ID})
    with pytest.raises(handler.ModelBuildFailed, match="raise buildRunners"):
        handler.is_complete(started())


def test_delete_stops_the_running_batches_of_its_fingerprint_and_waits_for_them(codebuild: Stubber) -> None:
    codebuild.add_response("list_build_batches_for_project", {"ids": [BATCH_ID]},
                           {"projectName": BUILD, "sortOrder": "DESCENDING"})  # fmt: skip
    codebuild.add_response(
        "batch_get_build_batches", {"buildBatches": [batch("IN_PROGRESS")]}, {"ids": [BATCH_ID]}
    )
    codebuild.add_response("stop_build_batch", {"buildBatch": batch("STOPPED")}, {"id": BATCH_ID})
    no_batches(codebuild, CHECK)
    deleted = handler.on_event(event("Delete", PhysicalResourceId=f"{BUILD}:{FINGERPRINT}"))
    assert deleted["Data"]["StoppedBuilds"] == FIRST
    codebuild.add_response(
        "batch_get_build_batches", {"buildBatches": [batch("STOPPED")]}, {"ids": [BATCH_ID]}
    )
    assert handler.is_complete(event("Delete", Data=deleted["Data"])) == {"IsComplete": True}


def test_the_handler_names_the_variables_the_buildspecs_use() -> None:
    from triton_mme_cdk.constructs.serving_check_spec import SHARD_CANDIDATES_VARIABLE

    assert handler.CANDIDATE_VARIABLE == CANDIDATE_VARIABLE
    assert handler.SHARD_CANDIDATES_VARIABLE == SHARD_CANDIDATES_VARIABLE

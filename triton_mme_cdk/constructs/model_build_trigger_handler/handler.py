"""Runs the model build's stages during `cdk deploy`: the custom resource provider's on-event and is-complete
handlers.

`Stages` names the CodeBuild projects in order: the build, then the serving check, which publishes the
build's manifest only when every archive loaded and answered in the endpoint's own image. on-event starts the
first stage; is-complete follows the stages: when one succeeds it starts the next, passing on the
fingerprint, the first stage's build id (MODEL_BUILD_ID, how a later stage's build of this run is found again)
and the variables the finished stage exported (the candidate manifest's digest); when one fails, the
resource fails with that stage's name, build id, the first `error: ` line of its log (the archive and
Triton's first error line, for the serving check) and a link to its logs.

The resource's `Fingerprint` property names everything the stages depend on (sources, catalog, images,
runners). A run starts only when the fingerprint has no successful run of the last stage yet, so an
unchanged catalog starts nothing and a changed one starts exactly one; a rollback to a fingerprint that was
built before starts nothing either.

A run never outlives the deployment that started it:
- is-complete stops the stage's build itself when it is still running `StopAfterSeconds` after the first stage
  started, before CloudFormation's one-hour limit for the resource runs out, and fails the resource;
- Delete (the stack's, the one after a failed or timed-out create, and the cleanup of a fingerprint that a
  rollback replaced) stops a running build of the deleted fingerprint in every stage and completes once they
  have ended;
- an Update that moves to another fingerprint (a rollback, or a newer deployment) stops the running builds of
  the fingerprint it leaves.
Each stop names one build (codebuild:StopBuild on its id). Delete never touches the published models: the
stages write only archives, candidates, reports and build manifests, which the store keeps.

Past CloudFormation's hour (`SignalUrl` and `Follower` set: the stages may take up to 12 hours), the
resource does not wait: on-event starts the first stage and an execution of the `Follower` state machine,
which polls is-complete with the same event until the stages end and then signals the wait condition behind
`SignalUrl` (a pre-signed URL of its handle) with SUCCESS, or FAILURE and the stage's own error line
(`signal`); the endpoint waits on that wait condition. A run that starts nothing signals SUCCESS at once.

A stage with `Batch: "true"` runs as a CodeBuild batch build (its buildspec's shards, `buildRunners` > 1):
it is started, followed, stopped and found again as a batch (StartBuildBatch, BatchGetBuildBatches,
StopBuildBatch, ListBuildBatchesForProject); a failed batch fails the resource with the first failed shard's
own error line and log link, and the next stage gets every shard's exported candidate digest, in shard order,
as CANDIDATE_SHARDS.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from typing import Any
from urllib.parse import quote

import boto3

FINGERPRINT_VARIABLE = "MODEL_BUILD_FINGERPRINT"
FIRST_BUILD_VARIABLE = "MODEL_BUILD_ID"
# ListBuildsForProject returns the newest builds first; one page is enough to find a recent build.
RECENT_BUILDS = 100
RUNNING = "IN_PROGRESS"
# What the build stage exports (the candidate manifest's sha256), per build and so per shard.
CANDIDATE_VARIABLE = "CANDIDATE_MANIFEST_SHA256"
# The digests the build shards exported, comma-separated in shard order, for the serving check's shards.
SHARD_CANDIDATES_VARIABLE = "CANDIDATE_SHARDS"
SHARD_PREFIX = "shard_"
# What the project's command line prints for every error a user can act on (triton_mme/cli.py).
ERROR_PREFIX = "error: "
LOG_PAGES = 5

# The on-event answer's mark of a run the follower state machine follows (past CloudFormation's hour).
FOLLOWED_BY = "FollowedBy"
# One signal per wait condition (its Count is 1); a second with the same id replaces the first.
SIGNAL_ID = "model-build"
MAX_REASON = 1000
SIGNAL_TIMEOUT_SECONDS = 20

_clients: dict[str, Any] = {}


class ModelBuildFailed(RuntimeError):
    """A stage did not succeed; the message names the stage, its build, what failed and where its logs are."""


def client(service: str) -> Any:
    if service not in _clients:
        _clients[service] = boto3.client(service)
    return _clients[service]


def stages_of(properties: dict[str, Any], physical_id: str = "") -> list[dict[str, str]]:
    """The stages in order ({"Name", "Project"}); a resource created before there were stages names one."""
    stages = properties.get("Stages")
    if stages:
        return [
            {"Name": str(s["Name"]), "Project": str(s["Project"]), "Batch": str(s.get("Batch", "false"))}
            for s in stages
        ]
    project = properties.get("ProjectName") or physical_id.partition(":")[0]
    return [{"Name": "model build", "Project": project, "Batch": "false"}] if project else []


def on_event(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    request = event["RequestType"]
    if request == "Delete":
        physical_id = event["PhysicalResourceId"]
        fingerprint = physical_id.partition(":")[2]
        stopped: list[str] = []
        if fingerprint:
            for stage in stages_of(event.get("ResourceProperties") or {}, physical_id):
                stopped += _stop_running(stage, _recent_runs(stage), fingerprint)
        return {"PhysicalResourceId": physical_id, "Data": {"StoppedBuilds": ",".join(stopped)}}
    properties = event["ResourceProperties"]
    stages, fingerprint = stages_of(properties), properties["Fingerprint"]
    first, last = stages[0]["Project"], stages[-1]["Project"]
    physical_id = f"{first}:{fingerprint}"
    old = event.get("OldResourceProperties", {})
    previous = old.get("Fingerprint")
    if request == "Update" and previous == fingerprint:
        # The fingerprint's build passed before; a new wait condition (the first past the hour) learns so.
        if properties.get("SignalUrl") and properties["SignalUrl"] != old.get("SignalUrl"):
            send_signal(properties["SignalUrl"], "SUCCESS", "built before")
        return {
            "PhysicalResourceId": event["PhysicalResourceId"],
            "Data": {"BuildId": "", "Started": "false"},
        }
    recent = {stage["Project"]: _recent_runs(stage) for stage in stages}
    # An update leaves `previous` behind (a rollback leaves the newer one): its builds must not go on.
    for stage in stages:
        _stop_running(stage, recent[stage["Project"]], previous)
    earlier = _succeeded_build(recent[last], fingerprint)
    if earlier is not None:
        if properties.get("SignalUrl"):
            send_signal(properties["SignalUrl"], "SUCCESS", f"built before by {earlier}")
        return {"PhysicalResourceId": physical_id, "Data": {"BuildId": earlier, "Started": "false"}}
    run_id = _start(stages[0], [_variable(FINGERPRINT_VARIABLE, fingerprint)])
    stop_at = int(time.time()) + int(properties["StopAfterSeconds"])
    print(
        f"started {stages[0]['Name']} {run_id} for fingerprint {fingerprint}; "
        f"the run stops at {stop_at} at the latest"
    )
    data = {"BuildId": run_id, "Started": "true", "StopAt": str(stop_at)}
    if properties.get("Follower"):
        execution = client("stepfunctions").start_execution(
            stateMachineArn=properties["Follower"],
            input=json.dumps(
                {"ResourceProperties": properties, "Data": data, "SignalUrl": properties["SignalUrl"]}
            ),
        )
        print(f"following {run_id} with {execution['executionArn']}")
        return {"PhysicalResourceId": physical_id, "Data": {**data, FOLLOWED_BY: execution["executionArn"]}}
    return {"PhysicalResourceId": physical_id, "Data": data}


def is_complete(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    data = event.get("Data") or {}
    if event["RequestType"] == "Delete":
        stopped = [run_id for run_id in data.get("StoppedBuilds", "").split(",") if run_id]
        batches = [run_id for run_id in stopped if _is_batch_id(run_id)]
        builds = [run_id for run_id in stopped if not _is_batch_id(run_id)]
        runs = _builds(builds) + _batches(batches)
        return {"IsComplete": not any(_status(run) == RUNNING for run in runs)}
    # A run the follower state machine follows completes the resource at once; the follower calls this
    # handler with the run's data, without the mark, until the stages end.
    if data.get("Started") != "true" or data.get(FOLLOWED_BY):
        return {"IsComplete": True}
    properties = event["ResourceProperties"]
    stages, fingerprint = stages_of(properties), properties["Fingerprint"]
    first_id, stop_at = data["BuildId"], int(data["StopAt"])
    finished: dict[str, Any] | None = None
    for index, stage in enumerate(stages):
        build = _first_run(stage, first_id) if index == 0 else _stage_run(stage, first_id)
        if build is None:
            assert finished is not None
            _start_stage(stage, fingerprint, first_id, finished)
            return {"IsComplete": False}
        status = _status(build)
        if status == RUNNING:
            if time.time() < stop_at:
                return {"IsComplete": False}
            _stop(stage, str(build["id"]))
            raise ModelBuildFailed(
                f"{stage['Name']} {build['id']} was still running when the deployment's time for it ran out; "
                "stopped it (lower buildTimeoutMinutes, servingCheckTimeoutMinutes and "
                f"buildQueueTimeoutMinutes, or raise buildRunners); logs: {_run_logs_link(build)}"
            )
        if status != "SUCCEEDED":
            outcome = str(status).lower().replace("_", " ")
            if _is_batch(stage):
                raise ModelBuildFailed(f"{stage['Name']} {build['id']} {outcome}{_batch_why(build)}")
            raise ModelBuildFailed(
                f"{stage['Name']} {build['id']} {outcome}{_why(build)}; logs: {logs_link(build)}"
            )
        finished = build
    assert finished is not None
    return {"IsComplete": True, "Data": {"BuildId": first_id, "LastBuildId": str(finished["id"])}}


def signal(event: dict[str, Any], context: Any = None) -> dict[str, str]:
    """The follower's last step: SUCCESS, or FAILURE with the error is-complete raised (its message: the
    stage, its build, the first error line, the logs)."""
    if event["Status"] == "SUCCESS":
        reason = "the model build and its serving check succeeded"
    else:
        error = event.get("Error") or {}
        try:
            reason = str(json.loads(error.get("Cause", "")).get("errorMessage", ""))
        except (ValueError, AttributeError):
            reason = str(error.get("Cause", ""))
        reason = reason or str(error.get("Error", "the model build failed"))
    send_signal(event["SignalUrl"], event["Status"], reason)
    return {"Status": event["Status"], "Reason": reason[:MAX_REASON]}


def send_signal(url: str, status: str, reason: str) -> None:
    """Signal a wait condition: a JSON PUT to its handle's pre-signed URL, with no content type (the URL's
    signature has none), as the CloudFormation User Guide's "Using wait conditions" shows."""
    body = json.dumps(
        {"Status": status, "Reason": reason[:MAX_REASON], "UniqueId": SIGNAL_ID, "Data": status}
    ).encode()
    request = urllib.request.Request(url, data=body, method="PUT", headers={"Content-Type": ""})
    with urllib.request.urlopen(request, timeout=SIGNAL_TIMEOUT_SECONDS) as answer:
        answer.read()
    print(f"signalled {status}: {reason[:MAX_REASON]}")


def _variable(name: str, value: str) -> dict[str, str]:
    return {"name": name, "value": value, "type": "PLAINTEXT"}


def _start_stage(stage: dict[str, str], fingerprint: str, first_id: str, finished: dict[str, Any]) -> None:
    """Start `stage` with the fingerprint, the run's first build id and what the finished stage exported (a
    finished batch: every shard's exported digest, in shard order)."""
    if _is_batch_id(str(finished["id"])):
        exported = [_variable(SHARD_CANDIDATES_VARIABLE, ",".join(_shard_exports(finished)))]
    else:
        exported = [
            _variable(str(v["name"]), str(v.get("value", "")))
            for v in finished.get("exportedEnvironmentVariables", [])
            if v.get("name") not in (FINGERPRINT_VARIABLE, FIRST_BUILD_VARIABLE)
        ]
    run_id = _start(
        stage,
        [_variable(FINGERPRINT_VARIABLE, fingerprint), _variable(FIRST_BUILD_VARIABLE, first_id), *exported],
    )
    print(f"started {stage['Name']} {run_id} after {finished['id']} (fingerprint {fingerprint})")


def _is_batch(stage: dict[str, str]) -> bool:
    return stage.get("Batch") == "true"


def _is_batch_id(run_id: str) -> bool:
    """Batch ids are `<project>:<uuid>` like builds; the run's first id carries the batch marker instead."""
    return run_id.startswith(BATCH_MARK)


# A batch's id is stored with this mark, so Data and StoppedBuilds tell a batch from a build.
BATCH_MARK = "batch/"


def _start(stage: dict[str, str], variables: list[dict[str, str]]) -> str:
    codebuild = client("codebuild")
    if _is_batch(stage):
        batch = codebuild.start_build_batch(
            projectName=stage["Project"], environmentVariablesOverride=variables
        )
        return BATCH_MARK + str(batch["buildBatch"]["id"])
    return str(
        codebuild.start_build(projectName=stage["Project"], environmentVariablesOverride=variables)["build"][
            "id"
        ]
    )


def _stop(stage: dict[str, str], run_id: str) -> None:
    if _is_batch_id(run_id):
        client("codebuild").stop_build_batch(id=run_id.removeprefix(BATCH_MARK))
    else:
        client("codebuild").stop_build(id=run_id)


def _status(run: dict[str, Any]) -> str:
    return str(run.get("buildBatchStatus") or run.get("buildStatus"))


def _batches(ids: list[str]) -> list[dict[str, Any]]:
    """Batches by marked id, each returned with its marked id."""
    if not ids:
        return []
    found = client("codebuild").batch_get_build_batches(ids=[i.removeprefix(BATCH_MARK) for i in ids])
    return [{**batch, "id": BATCH_MARK + str(batch["id"])} for batch in found.get("buildBatches", [])]


def _first_run(stage: dict[str, str], run_id: str) -> dict[str, Any]:
    runs = _batches([run_id]) if _is_batch_id(run_id) else _builds([run_id])
    if not runs:
        raise ModelBuildFailed(f"{stage['Name']} {run_id} not found; it may have been deleted")
    return runs[0]


def _stage_run(stage: dict[str, str], first_id: str) -> dict[str, Any] | None:
    """This run's build (or batch) of a later stage: the newest one started for `first_id`."""
    return next((r for r in _recent_runs(stage) if _variable_of(r, FIRST_BUILD_VARIABLE) == first_id), None)


def _recent_runs(stage: dict[str, str]) -> list[dict[str, Any]]:
    if not _is_batch(stage):
        return _recent_builds(stage["Project"])
    ids = (
        client("codebuild")
        .list_build_batches_for_project(projectName=stage["Project"], sortOrder="DESCENDING")
        .get("ids", [])
    )
    return _batches([BATCH_MARK + str(i) for i in ids[:RECENT_BUILDS]])


def _shard_builds(batch: dict[str, Any]) -> list[tuple[str, str]]:
    """(identifier, build id) of each shard of a batch, in shard order."""
    shards = []
    for group in batch.get("buildGroups", []):
        identifier = str(group.get("identifier", ""))
        arn = str((group.get("currentBuildSummary") or {}).get("arn", ""))
        if identifier.startswith(SHARD_PREFIX) and arn:
            shards.append((identifier, arn.partition(":build/")[2] or arn))
    return sorted(shards, key=lambda shard: int(shard[0].removeprefix(SHARD_PREFIX) or 0))


def _shard_exports(batch: dict[str, Any]) -> list[str]:
    """Each shard build's exported candidate digest, in shard order."""
    shards = _shard_builds(batch)
    builds = {str(b["id"]): b for b in _builds([build_id for _, build_id in shards])}
    digests = []
    for identifier, build_id in shards:
        exported = builds.get(build_id, {}).get("exportedEnvironmentVariables", [])
        values = [str(v.get("value", "")) for v in exported if v.get("name") == CANDIDATE_VARIABLE]
        if not values or not values[0]:
            raise ModelBuildFailed(f"{identifier} ({build_id}) of batch {batch['id']} exported no candidate")
        digests.append(values[0])
    return digests


def _batch_why(batch: dict[str, Any]) -> str:
    """`: <group> <build>: <its error line>; logs: <its link>` of the first failed build of a batch."""
    failed = [
        (str(group.get("identifier", "")), str((group.get("currentBuildSummary") or {}).get("arn", "")))
        for group in batch.get("buildGroups", [])
        if (group.get("currentBuildSummary") or {}).get("buildStatus") not in (None, "SUCCEEDED", RUNNING)
    ]
    if not failed:
        return ""
    identifier, arn = failed[0]
    build_id = arn.partition(":build/")[2] or arn
    builds = _builds([build_id])
    if not builds:
        return f": {identifier} {build_id} failed"
    return f": {identifier} {build_id}{_why(builds[0])}; logs: {logs_link(builds[0])}"


def _run_logs_link(run: dict[str, Any]) -> str:
    if _is_batch_id(str(run["id"])):
        region = os.environ.get("AWS_REGION", "us-east-1")
        batch_id = str(run["id"]).removeprefix(BATCH_MARK)
        project = batch_id.split(":")[0]
        return (
            f"https://{region}.console.aws.amazon.com/codesuite/codebuild/projects/{project}"
            f"/batch/{quote(batch_id, safe='')}?region={region}"
        )
    return logs_link(run)


def _builds(ids: list[str]) -> list[dict[str, Any]]:
    if not ids:
        return []
    return list(client("codebuild").batch_get_builds(ids=ids).get("builds", []))


def _recent_builds(project: str) -> list[dict[str, Any]]:
    ids = (
        client("codebuild")
        .list_builds_for_project(projectName=project, sortOrder="DESCENDING")
        .get("ids", [])
    )
    return _builds(ids[:RECENT_BUILDS])


def _variable_of(build: dict[str, Any], name: str) -> str | None:
    variables = build.get("environment", {}).get("environmentVariables", [])
    return next((v.get("value") for v in variables if v["name"] == name), None)


def _stop_running(stage: dict[str, str], runs: list[dict[str, Any]], fingerprint: str | None) -> list[str]:
    """Stop the running builds (or batches) of `fingerprint` (at most one per project: one runs at a time)."""
    if not fingerprint:
        return []
    running = [
        str(r["id"])
        for r in runs
        if _status(r) == RUNNING and _variable_of(r, FINGERPRINT_VARIABLE) == fingerprint
    ]
    for run_id in running:
        _stop(stage, run_id)
        print(f"stopped {run_id} of fingerprint {fingerprint}")
    return running


def _succeeded_build(runs: list[dict[str, Any]], fingerprint: str) -> str | None:
    for run in runs:
        if _status(run) == "SUCCEEDED" and _variable_of(run, FINGERPRINT_VARIABLE) == fingerprint:
            return str(run["id"])
    return None


def _why(build: dict[str, Any]) -> str:
    """`: <the command's own error line>`, else the failed phase's context."""
    line = _first_error_line(build)
    if line:
        return f": {line}"
    for phase in build.get("phases", []):
        if phase.get("phaseStatus") not in (None, "SUCCEEDED"):
            messages = [c["message"] for c in phase.get("contexts", []) if c.get("message", "").strip()]
            detail = f": {messages[0].strip().splitlines()[0]}" if messages else ""
            return f" in phase {phase['phaseType']}{detail}"
    return ""


def _first_error_line(build: dict[str, Any]) -> str | None:
    """The first line the project's command line printed as `error: ...` in the build's log, if any."""
    group, stream = build.get("logs", {}).get("groupName"), build.get("logs", {}).get("streamName")
    if not group or not stream:
        return None
    arguments: dict[str, Any] = {
        "logGroupName": group,
        "logStreamNames": [stream],
        "filterPattern": f'"{ERROR_PREFIX.strip()}"',
    }
    try:
        for _ in range(LOG_PAGES):
            page = client("logs").filter_log_events(**arguments)
            for log_event in page.get("events", []):
                message = str(log_event.get("message", "")).strip()
                if message.startswith(ERROR_PREFIX):
                    return message.removeprefix(ERROR_PREFIX).splitlines()[0]
            if not page.get("nextToken"):
                return None
            arguments["nextToken"] = page["nextToken"]
    except Exception as error:  # the log is a courtesy: the phase context still says what failed
        print(f"could not read {group}/{stream}: {error}")
    return None


def logs_link(build: dict[str, Any]) -> str:
    """The CloudWatch deep link CodeBuild reports, else the build's page in the CodeBuild console."""
    deep_link = build.get("logs", {}).get("deepLink")
    if deep_link:
        return str(deep_link)
    region = os.environ.get("AWS_REGION", "us-east-1")
    project = build["id"].split(":")[0]
    return (
        f"https://{region}.console.aws.amazon.com/codesuite/codebuild/projects/{project}"
        f"/build/{quote(build['id'], safe='')}/log?region={region}"
    )

"""Runs the model build during `cdk deploy`: the custom resource provider's on-event and is-complete handlers.

The resource's `Fingerprint` property names everything the build depends on (sources, catalog, serving
image, runner). A build starts only when the fingerprint has no successful build yet, so an unchanged
catalog starts nothing and a changed one starts exactly one; a rollback to a fingerprint that was
built before starts nothing either.

A build never outlives the deployment that started it:
- is-complete stops it itself when it is still running `StopAfterSeconds` after it was started, before
  CloudFormation's one-hour limit for the resource runs out, and fails the resource;
- Delete (the stack's, the one after a failed or timed-out create, and the cleanup of a fingerprint that a
  rollback replaced) stops a running build of the deleted fingerprint and completes once it has ended;
- an Update that moves to another fingerprint (a rollback, or a newer deployment) stops a running build of
  the fingerprint it leaves.
Each stop names one build (codebuild:StopBuild on its id). Delete never touches the published models: the
build writes only archives and its own manifest, which the store keeps.
"""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import quote

import boto3

FINGERPRINT_VARIABLE = "MODEL_BUILD_FINGERPRINT"
# ListBuildsForProject returns the newest builds first; one page is enough to find a recent success.
RECENT_BUILDS = 100
RUNNING = "IN_PROGRESS"

_client: Any = None


class ModelBuildFailed(RuntimeError):
    """The build did not succeed; the message names the build, its status and where its logs are."""


def codebuild() -> Any:
    global _client
    if _client is None:
        _client = boto3.client("codebuild")
    return _client


def on_event(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    request = event["RequestType"]
    if request == "Delete":
        project, _, fingerprint = event["PhysicalResourceId"].partition(":")
        stopped = _stop_running(_recent_builds(project), fingerprint) if fingerprint else []
        return {
            "PhysicalResourceId": event["PhysicalResourceId"],
            "Data": {"StoppedBuilds": ",".join(stopped)},
        }
    properties = event["ResourceProperties"]
    project, fingerprint = properties["ProjectName"], properties["Fingerprint"]
    physical_id = f"{project}:{fingerprint}"
    previous = event.get("OldResourceProperties", {}).get("Fingerprint")
    if request == "Update" and previous == fingerprint:
        return {
            "PhysicalResourceId": event["PhysicalResourceId"],
            "Data": {"BuildId": "", "Started": "false"},
        }
    recent = _recent_builds(project)
    # An update leaves `previous` behind (a rollback leaves the newer one): its build must not go on.
    _stop_running(recent, previous)
    earlier = _succeeded_build(recent, fingerprint)
    if earlier is not None:
        return {"PhysicalResourceId": physical_id, "Data": {"BuildId": earlier, "Started": "false"}}
    build = codebuild().start_build(
        projectName=project,
        environmentVariablesOverride=[
            {"name": FINGERPRINT_VARIABLE, "value": fingerprint, "type": "PLAINTEXT"}
        ],
    )["build"]
    stop_at = int(time.time()) + int(properties["StopAfterSeconds"])
    print(
        f"started model build {build['id']} for fingerprint {fingerprint}; stops at {stop_at} at the latest"
    )
    return {
        "PhysicalResourceId": physical_id,
        "Data": {"BuildId": build["id"], "Started": "true", "StopAt": str(stop_at)},
    }


def is_complete(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    data = event.get("Data") or {}
    if event["RequestType"] == "Delete":
        stopped = [build_id for build_id in data.get("StoppedBuilds", "").split(",") if build_id]
        return {"IsComplete": not any(b.get("buildStatus") == RUNNING for b in _builds(stopped))}
    if data.get("Started") != "true":
        return {"IsComplete": True}
    build_id = data["BuildId"]
    builds = _builds([build_id])
    if not builds:
        raise ModelBuildFailed(f"model build {build_id} not found; it may have been deleted")
    build = builds[0]
    status = build["buildStatus"]
    if status == RUNNING:
        if time.time() < int(data["StopAt"]):
            return {"IsComplete": False}
        codebuild().stop_build(id=build_id)
        raise ModelBuildFailed(
            f"model build {build_id} was still running when the deployment's time for it ran out; stopped it "
            f"(lower buildTimeoutMinutes and buildQueueTimeoutMinutes); logs: {logs_link(build)}"
        )
    if status == "SUCCEEDED":
        return {"IsComplete": True, "Data": {"BuildId": build_id}}
    outcome = status.lower().replace("_", " ")
    raise ModelBuildFailed(
        f"model build {build_id} {outcome}{_failed_phase(build)}; logs: {logs_link(build)}"
    )


def _builds(ids: list[str]) -> list[dict[str, Any]]:
    if not ids:
        return []
    return list(codebuild().batch_get_builds(ids=ids).get("builds", []))


def _recent_builds(project: str) -> list[dict[str, Any]]:
    ids = codebuild().list_builds_for_project(projectName=project, sortOrder="DESCENDING").get("ids", [])
    return _builds(ids[:RECENT_BUILDS])


def _fingerprint_of(build: dict[str, Any]) -> str | None:
    variables = build.get("environment", {}).get("environmentVariables", [])
    return next((v.get("value") for v in variables if v["name"] == FINGERPRINT_VARIABLE), None)


def _stop_running(builds: list[dict[str, Any]], fingerprint: str | None) -> list[str]:
    """Stop the running builds of `fingerprint` (at most one: one build of the project runs at a time)."""
    if not fingerprint:
        return []
    running = [
        str(b["id"]) for b in builds if b.get("buildStatus") == RUNNING and _fingerprint_of(b) == fingerprint
    ]
    for build_id in running:
        codebuild().stop_build(id=build_id)
        print(f"stopped model build {build_id} of fingerprint {fingerprint}")
    return running


def _succeeded_build(builds: list[dict[str, Any]], fingerprint: str) -> str | None:
    for build in builds:
        if build.get("buildStatus") == "SUCCEEDED" and _fingerprint_of(build) == fingerprint:
            return str(build["id"])
    return None


def _failed_phase(build: dict[str, Any]) -> str:
    for phase in build.get("phases", []):
        if phase.get("phaseStatus") not in (None, "SUCCEEDED"):
            messages = [c["message"] for c in phase.get("contexts", []) if c.get("message", "").strip()]
            detail = f": {messages[0].strip().splitlines()[0]}" if messages else ""
            return f" in phase {phase['phaseType']}{detail}"
    return ""


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

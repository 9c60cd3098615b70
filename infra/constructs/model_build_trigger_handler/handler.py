"""Runs the model build during `cdk deploy`: the custom resource provider's on-event and is-complete handlers.

The resource's `Fingerprint` property names everything the build depends on (sources, catalog, serving
image, runner). A build starts only when the fingerprint has no successful build yet, so an unchanged
catalog starts nothing and a changed one starts exactly one; a rollback to a fingerprint that was
built before starts nothing either. Delete never touches the published models.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

import boto3

FINGERPRINT_VARIABLE = "MODEL_BUILD_FINGERPRINT"
# ListBuildsForProject returns the newest builds first; one page is enough to find a recent success.
RECENT_BUILDS = 100

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
        # The models outlive the stack (the store is retained); there is nothing to undo.
        return {"PhysicalResourceId": event["PhysicalResourceId"]}
    properties = event["ResourceProperties"]
    project, fingerprint = properties["ProjectName"], properties["Fingerprint"]
    physical_id = f"{project}:{fingerprint}"
    if request == "Update" and event["OldResourceProperties"].get("Fingerprint") == fingerprint:
        return {
            "PhysicalResourceId": event["PhysicalResourceId"],
            "Data": {"BuildId": "", "Started": "false"},
        }
    earlier = _succeeded_build(project, fingerprint)
    if earlier is not None:
        return {"PhysicalResourceId": physical_id, "Data": {"BuildId": earlier, "Started": "false"}}
    build = codebuild().start_build(
        projectName=project,
        environmentVariablesOverride=[
            {"name": FINGERPRINT_VARIABLE, "value": fingerprint, "type": "PLAINTEXT"}
        ],
    )["build"]
    print(f"started model build {build['id']} for fingerprint {fingerprint}")
    return {"PhysicalResourceId": physical_id, "Data": {"BuildId": build["id"], "Started": "true"}}


def is_complete(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    data = event.get("Data") or {}
    if event["RequestType"] == "Delete" or data.get("Started") != "true":
        return {"IsComplete": True}
    build_id = data["BuildId"]
    builds = codebuild().batch_get_builds(ids=[build_id]).get("builds", [])
    if not builds:
        raise ModelBuildFailed(f"model build {build_id} not found; it may have been deleted")
    build = builds[0]
    status = build["buildStatus"]
    if status == "IN_PROGRESS":
        return {"IsComplete": False}
    if status == "SUCCEEDED":
        return {"IsComplete": True, "Data": {"BuildId": build_id}}
    outcome = status.lower().replace("_", " ")
    raise ModelBuildFailed(
        f"model build {build_id} {outcome}{_failed_phase(build)}; logs: {logs_link(build)}"
    )


def _succeeded_build(project: str, fingerprint: str) -> str | None:
    ids = codebuild().list_builds_for_project(projectName=project, sortOrder="DESCENDING").get("ids", [])
    if not ids:
        return None
    for build in codebuild().batch_get_builds(ids=ids[:RECENT_BUILDS]).get("builds", []):
        variables = {
            v["name"]: v.get("value") for v in build.get("environment", {}).get("environmentVariables", [])
        }
        if build.get("buildStatus") == "SUCCEEDED" and variables.get(FINGERPRINT_VARIABLE) == fingerprint:
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

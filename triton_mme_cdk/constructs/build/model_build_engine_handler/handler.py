"""What runs in AWS for the deploy's model build engine (model_build_engine.py); it ships alone.

`on_event` serves the `Custom::ModelBuild` run of one fingerprint: Create starts one execution of the build
state machine, named from the fingerprint and CloudFormation's request id (a retried request starts none
twice); Delete (rollback, cancelled deploy, cleanup) stops it, and Step Functions cancels its build; Update
changes nothing. `signal` is the state machine's function: it sends the wait condition SUCCESS or the failed
stage's first `error:` line. The handle's pre-signed URL is read from CloudFormation there, never passed,
printed or returned.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import urllib.request
from typing import Any

import boto3
from botocore.exceptions import ClientError

# What the project's command line prints first for every error a user can act on (triton_mme/cli.py).
ERROR_PREFIX = "error: "
LOG_PAGES = 5
MAX_REASON = 1000
# Step Functions execution names: at most 80 characters; a request id is a 36-character UUID.
FINGERPRINT_IN_NAME = 43


@functools.cache
def client(service: str) -> Any:
    return boto3.client(service)


def on_event(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    arn = event.get("PhysicalResourceId", "")
    if event["RequestType"] == "Delete" and ":execution:" in arn:
        try:  # a closed execution has nothing to stop; a Delete never fails a rollback
            client("stepfunctions").stop_execution(executionArn=arn, cause="its deployment moved on")
        except ClientError as error:
            print(f"{arn}: not stopped ({error.response['Error']['Code']})")
    if event["RequestType"] != "Create":
        return {"PhysicalResourceId": arn}
    properties, sfn = event["ResourceProperties"], client("stepfunctions")
    name = f"{properties['Fingerprint'][:FINGERPRINT_IN_NAME]}-{event['RequestId']}"
    run = {key: properties[key] for key in ("Fingerprint", "Handle", "BuildManifestKey")}
    with contextlib.suppress(sfn.exceptions.ExecutionAlreadyExists):  # an earlier try of this request
        sfn.start_execution(stateMachineArn=properties["StateMachine"], name=name, input=json.dumps(run))
    arn = properties["StateMachine"].replace(":stateMachine:", ":execution:", 1) + f":{name}"
    print(f"model build of {properties['Fingerprint']}: {arn}")
    return {"PhysicalResourceId": arn}


def signal(event: dict[str, Any], context: Any = None) -> dict[str, str]:
    """{"Handle"}: SUCCESS; with the failed stage's "Stage", "Minutes" and caught "Failure": FAILURE."""
    status = "FAILURE" if "Failure" in event else "SUCCESS"
    reason = "the model build and its serving check passed" if status == "SUCCESS" else failure_reason(event)
    url = client("cloudformation").describe_stack_resource(
        StackName=os.environ["STACK_ID"], LogicalResourceId=event["Handle"]
    )["StackResourceDetail"]["PhysicalResourceId"]
    body = {"Status": status, "Reason": reason[:MAX_REASON], "UniqueId": "model-build", "Data": status}
    # No content type: the URL's signature has none (CloudFormation User Guide, "Using wait conditions").
    put = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": ""}, method="PUT")
    try:
        with urllib.request.urlopen(put, timeout=20) as answer:
            answer.read()
    except OSError as error:  # its text may quote the URL: only its kind and status leave here
        kind = getattr(error, "code", type(error).__name__)
        raise RuntimeError(f"signal {status} to {event['Handle']}: {kind}") from None
    print(f"signalled {event['Handle']} {status}: {body['Reason']}")
    return {"Status": status, "Reason": body["Reason"]}


def failure_reason(event: dict[str, Any]) -> str:
    """`<stage> <build> failed: <its first error: line>; logs: <link>`, else what Step Functions caught."""
    stage, failure = event["Stage"], event.get("Failure") or {}
    error, cause = str(failure.get("Error", "")), str(failure.get("Cause", ""))
    if error == "States.Timeout":
        return (
            f"{stage} did not end within its {event['Minutes']} minutes (queueing counted); raise "
            "buildRunners or the stage's timeout, or build fewer models at once (docs/deploy.md#time-limit)"
        )
    if (build_id := _failed_build(cause)) is None:
        return f"{stage} failed: {error}: {cause[:300]}"
    build = (client("codebuild").batch_get_builds(ids=[build_id])["builds"] or [{}])[0]
    status = str(build.get("buildStatus", "failed")).lower().replace("_", " ")
    line, link = _first_error_line(build), build.get("logs", {}).get("deepLink")
    return (
        f"{stage} {build_id} {status}" + (f": {line}" if line else "") + (f"; logs: {link}" if link else "")
    )


def _failed_build(cause: str) -> str | None:
    """The build a CodeBuild task's cause names: the build, or a batch's first failed build."""
    with contextlib.suppress(ValueError, AttributeError):
        document = json.loads(cause)
        if build_id := (document.get("Build") or {}).get("Id"):
            return str(build_id)
        for group in (document.get("BuildBatch") or {}).get("BuildGroups", []):
            summary = group.get("CurrentBuildSummary") or {}
            if summary.get("BuildStatus") not in (None, "SUCCEEDED", "IN_PROGRESS") and summary.get("Arn"):
                return str(summary["Arn"]).partition(":build/")[2]
    return None


def _first_error_line(build: dict[str, Any]) -> str | None:
    """The first line the project's command line printed as `error: ...` in the build's log (5 pages)."""
    logs = build.get("logs", {})
    if not logs.get("groupName") or not logs.get("streamName"):
        return None
    where = {"logGroupName": logs["groupName"], "logStreamNames": [logs["streamName"]]}
    pages = client("logs").get_paginator("filter_log_events").paginate(**where, filterPattern='"error:"')
    events = (event for page in itertools.islice(pages, LOG_PAGES) for event in page.get("events", []))
    messages = (str(event.get("message", "")).strip() for event in events)
    line = next((message for message in messages if message.startswith(ERROR_PREFIX)), None)
    return line.removeprefix(ERROR_PREFIX).splitlines()[0] if line else None

"""What runs in AWS for the deploy's model build engine (model_build_engine.py); it ships alone.

- `on_event`: the `Custom::ModelBuild` resource of one fingerprint. Create starts one execution of the
  stack's build state machine, named from the fingerprint and CloudFormation's request id, so a retried
  request starts none twice; Delete (a rollback, a cancelled deploy, the cleanup after the next fingerprint)
  stops that execution, and Step Functions stops the build it runs. Update changes nothing: each fingerprint
  and timeout gets its own resource.
- `candidates`: a finished build batch's candidate digests, comma-separated in shard order, for the serving
  check's shards.
- `signal`: the state machine's last step, SUCCESS or FAILURE with the failed stage's first `error:` line,
  sent to the wait condition's handle. The handle's pre-signed URL is read from CloudFormation here, never
  passed, logged or returned.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

import boto3
from botocore.exceptions import ClientError

# Set on the build stage, read back from the shards' builds (build_spec.CANDIDATE_VARIABLE; a test checks it).
CANDIDATE_VARIABLE = "CANDIDATE_MANIFEST_SHA256"
SHARD_PREFIX = "shard_"
# What the project's command line prints first for every error a user can act on (triton_mme/cli.py).
ERROR_PREFIX = "error: "
LOG_PAGES = 5
# One signal per wait condition (Count 1); a second with the same id replaces the first.
SIGNAL_ID = "model-build"
MAX_REASON = 1000
SIGNAL_TIMEOUT_SECONDS = 20
# Step Functions: execution names are at most 80 characters; a request id is a 36-character UUID.
FINGERPRINT_IN_NAME = 43

_clients: dict[str, Any] = {}


def client(service: str) -> Any:
    if service not in _clients:
        _clients[service] = boto3.client(service)
    return _clients[service]


def execution_arn(state_machine_arn: str, name: str) -> str:
    return state_machine_arn.replace(":stateMachine:", ":execution:", 1) + f":{name}"


def on_event(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    request = event["RequestType"]
    if request == "Update":
        return {"PhysicalResourceId": event["PhysicalResourceId"]}
    if request == "Delete":
        arn = event["PhysicalResourceId"]
        if ":execution:" in arn:
            try:
                client("stepfunctions").stop_execution(executionArn=arn, cause="its deployment moved on")
            except ClientError as error:
                # A closed execution has nothing to stop; a Delete must never fail a rollback.
                print(f"{arn}: not stopped ({error.response['Error']['Code']})")
        return {"PhysicalResourceId": arn}
    properties = event["ResourceProperties"]
    name = f"{properties['Fingerprint'][:FINGERPRINT_IN_NAME]}-{event['RequestId']}"
    arn = execution_arn(properties["StateMachine"], name)
    run = {key: properties[key] for key in ("Fingerprint", "Handle", "BuildManifestKey")}
    sfn = client("stepfunctions")
    try:
        sfn.start_execution(stateMachineArn=properties["StateMachine"], name=name, input=json.dumps(run))
    except sfn.exceptions.ExecutionAlreadyExists:
        pass  # this request's own execution, started by an earlier try
    print(f"model build of {properties['Fingerprint']}: {arn}")
    return {"PhysicalResourceId": arn}


def step(event: dict[str, Any], context: Any = None) -> Any:
    """The state machine's function: `Entry` names the step."""
    return {"candidates": candidates, "signal": signal}[event["Entry"]](event)


def candidates(event: dict[str, Any], context: Any = None) -> str:
    """`event["Groups"]`: the batch's BuildGroups as Step Functions returns them (PascalCase)."""
    shards = sorted(
        (int(group["Identifier"].removeprefix(SHARD_PREFIX)), _build_id(group["CurrentBuildSummary"]["Arn"]))
        for group in event["Groups"]
        if group.get("Identifier", "").startswith(SHARD_PREFIX)
    )
    builds = {b["id"]: b for b in client("codebuild").batch_get_builds(ids=[i for _, i in shards])["builds"]}
    digests = []
    for index, build_id in shards:
        exported = builds.get(build_id, {}).get("exportedEnvironmentVariables", [])
        value = next((v.get("value") for v in exported if v["name"] == CANDIDATE_VARIABLE), None)
        if not value:
            raise RuntimeError(f"{SHARD_PREFIX}{index} ({build_id}) exported no {CANDIDATE_VARIABLE}")
        digests.append(value)
    return ",".join(digests)


def signal(event: dict[str, Any], context: Any = None) -> dict[str, str]:
    """{"Handle", "Status"} and, for FAILURE, the failed stage's "Stage", "Minutes" and caught "Failure"."""
    status = event["Status"]
    reason = "the model build and its serving check passed" if status == "SUCCESS" else failure_reason(event)
    reason = reason[:MAX_REASON]
    resource = client("cloudformation").describe_stack_resource(
        StackName=os.environ["STACK_ID"], LogicalResourceId=event["Handle"]
    )["StackResourceDetail"]
    body = json.dumps({"Status": status, "Reason": reason, "UniqueId": SIGNAL_ID, "Data": status}).encode()
    # No content type: the URL's signature has none (CloudFormation User Guide, "Using wait conditions").
    put = urllib.request.Request(
        resource["PhysicalResourceId"], data=body, method="PUT", headers={"Content-Type": ""}
    )
    try:
        with urllib.request.urlopen(put, timeout=SIGNAL_TIMEOUT_SECONDS) as answer:
            answer.read()
    except (urllib.error.URLError, OSError) as error:
        # The error's text may quote the URL: only its kind and status leave this function.
        raise RuntimeError(
            f"signal {status} to {event['Handle']}: {getattr(error, 'code', type(error).__name__)}"
        ) from None
    print(f"signalled {event['Handle']} {status}: {reason}")
    return {"Status": status, "Reason": reason}


def failure_reason(event: dict[str, Any]) -> str:
    """`<stage> <build> failed: <its first error: line>; logs: <link>`, or what Step Functions caught."""
    stage, failure = event["Stage"], event.get("Failure") or {}
    error, cause = str(failure.get("Error", "")), str(failure.get("Cause", ""))
    if error == "States.Timeout":
        return (
            f"{stage} did not end within its {event['Minutes']} minutes (queueing counted); stopped "
            "(lower the catalog, raise buildRunners or the stage's timeout, docs/deploy.md#time-limit)"
        )
    build_id = _failed_build(cause)
    if build_id is None:
        return f"{stage} failed: {error}: {cause[:300]}"
    builds = client("codebuild").batch_get_builds(ids=[build_id])["builds"]
    build = builds[0] if builds else {"id": build_id}
    status = str(build.get("buildStatus", "failed")).lower().replace("_", " ")
    line = _first_error_line(build) or _failed_phase(build)
    link = build.get("logs", {}).get("deepLink", "")
    return f"{stage} {build_id} {status}{f': {line}' if line else ''}{f'; logs: {link}' if link else ''}"


def _build_id(arn: str) -> str:
    return arn.partition(":build/")[2] or arn


def _failed_build(cause: str) -> str | None:
    """The failed build named by a CodeBuild task's cause: the build, or a batch's first failed build."""
    try:
        document = json.loads(cause)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    build = document.get("Build") or {}
    if build.get("Id") or build.get("Arn"):
        return str(build.get("Id") or _build_id(build["Arn"]))
    for group in (document.get("BuildBatch") or {}).get("BuildGroups", []):
        summary = group.get("CurrentBuildSummary") or {}
        if summary.get("BuildStatus") not in (None, "SUCCEEDED", "IN_PROGRESS") and summary.get("Arn"):
            return _build_id(str(summary["Arn"]))
    return None


def _failed_phase(build: dict[str, Any]) -> str:
    for phase in build.get("phases", []):
        if phase.get("phaseStatus") not in (None, "SUCCEEDED"):
            messages = [c["message"] for c in phase.get("contexts", []) if c.get("message", "").strip()]
            return f"in phase {phase['phaseType']}" + (
                f": {messages[0].strip().splitlines()[0]}" if messages else ""
            )
    return ""


def _first_error_line(build: dict[str, Any]) -> str | None:
    """The first line the project's command line printed as `error: ...` in the build's log."""
    group, stream = build.get("logs", {}).get("groupName"), build.get("logs", {}).get("streamName")
    if not group or not stream:
        return None
    arguments: dict[str, Any] = {
        "logGroupName": group,
        "logStreamNames": [stream],
        "filterPattern": f'"{ERROR_PREFIX.strip()}"',
    }
    for _ in range(LOG_PAGES):
        page = client("logs").filter_log_events(**arguments)
        for log_event in page.get("events", []):
            message = str(log_event.get("message", "")).strip()
            if message.startswith(ERROR_PREFIX):
                return message.removeprefix(ERROR_PREFIX).splitlines()[0]
        if not page.get("nextToken"):
            return None
        arguments["nextToken"] = page["nextToken"]
    return None

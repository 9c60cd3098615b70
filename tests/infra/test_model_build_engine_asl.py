"""The build engine's synthesized state machine, checked as an engine would run it.

- `asl-validator` (npm, pinned in package.json) validates each definition the app synthesizes.
- moto's Amazon States Language interpreter (moto 5's Step Functions parser, enabled with
  `mock_aws(config={"stepfunctions": {"execute_state_machine": True}})`) runs it offline. moto has no
  CodeBuild integration (`codebuild` is in its unsupported services), so only CodeBuild's results are stood
  in: `CodeBuildStandIn` answers `startBuild(.sync)` / `startBuildBatch(.sync)` with what the test scripts.
  The state machine's own function runs in-process with its real code (handler.signal), its AWS calls stubbed
  with botocore's Stubber, and signals a local HTTP server standing for the wait condition's handle URL.
  S3 (the built-before look-up) is moto's.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEvent,
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task import (
    lambda_eval_utils,
    state_task_factory,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import ResourceCondition
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (  # noqa: E501
    StateTaskServiceCallback,
)
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from synth_support import REPO_ROOT, Synthesized

from triton_mme_cdk.constructs.build.build_state_machine import REFUSED_START
from triton_mme_cdk.constructs.build.model_build_engine_handler import handler

REGION, ACCOUNT = "us-east-1", "123456789012"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:step"
BUCKET = "model-store"
FINGERPRINT = "ab" * 32
BUILD_PROJECT, CHECK_PROJECT = "ModelBuildProject", "ServingCheckProject"


def definition(synth: Synthesized) -> dict[str, Any]:
    """The engine's definition with the template's references made concrete (the one state machine)."""
    (machine,) = [
        r
        for k, r in synth.resources.items()
        if r["Type"] == "AWS::StepFunctions::StateMachine" and "Engine" in k
    ]

    def concrete(part: Any) -> str:
        if isinstance(part, str):
            return part
        if part == {"Ref": "AWS::Partition"}:
            return "aws"
        name = json.dumps(part)
        if "Signal" in name:
            return FUNCTION_ARN
        if "ModelStoreBucket" in name:
            return BUCKET
        return BUILD_PROJECT if "ModelBuildProject" in name else CHECK_PROJECT

    return json.loads("".join(concrete(p) for p in machine["Properties"]["DefinitionString"]["Fn::Join"][1]))


@pytest.mark.parametrize("variant", [{}, {"build_runners": 4}, {"build_timeout_minutes": 300}])
def test_the_synthesized_definition_passes_the_asl_validator(
    synth_with: Callable[..., Synthesized], variant: dict[str, Any], tmp_path: Any
) -> None:
    path = tmp_path / "definition.json"
    path.write_text(json.dumps(definition(synth_with(**variant))))
    result = subprocess.run(
        ["npx", "--no-install", "asl-validator", "--json-path", str(path)],
        cwd=REPO_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    # A definition the validator refuses fails it: the check can fail.
    path.write_text(json.dumps({"StartAt": "Nowhere", "States": {}}))
    refused = subprocess.run(
        ["npx", "--no-install", "asl-validator", "--json-path", str(path)],
        cwd=REPO_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode != 0


@pytest.mark.parametrize("variant", [{}, {"build_runners": 4}])
def test_one_build_and_a_batch_share_one_shape_and_pass_only_the_fingerprint_and_the_run(
    synth_with: Callable[..., Synthesized], variant: dict[str, Any]
) -> None:
    """No step between the stages: the check finds each shard's candidate in the store (store.stages)."""
    states = definition(synth_with(**variant))["States"]
    assert sorted(states) == sorted(
        ["BuiltBefore", "ModelBuild", "ServingCheck", "SignalSuccess", "ReportModelBuildFailure",
         "ReportServingCheckFailure", "Failed"]
    )  # fmt: skip
    assert (
        states["ModelBuild"]["Next"] == "ServingCheck" and states["ServingCheck"]["Next"] == "SignalSuccess"
    )
    action = "startBuildBatch.sync" if variant else "startBuild.sync"
    for stage in ("ModelBuild", "ServingCheck"):
        assert states[stage]["Resource"].endswith(action) and states[stage]["ResultPath"] is None
        variables = states[stage]["Parameters"]["EnvironmentVariablesOverride"]
        assert [(v["Name"], v["Value.$"]) for v in variables] == [
            ("MODEL_BUILD_FINGERPRINT", "$.Fingerprint"),
            ("MODEL_BUILD_RUN", "$$.Execution.Name"),
        ]


# ----- the stand-ins --------------------------------------------------------------------------------------

Outcome = Callable[[dict[str, Any]], Any]
STARTS: list[tuple[str, dict[str, Any]]] = []
OUTCOMES: dict[str, list[Outcome]] = {}


HISTORY_RACE_TRIES = 3


class _HistoryRace(Exception):
    """moto could not serialise the execution's history (see run_again_on_a_race)."""


class CodeBuildStandIn(StateTaskServiceCallback):
    """What CodeBuild answers: each start of a project takes the next scripted outcome of that project."""

    def __init__(self) -> None:
        # As moto's own Batch integration: .sync, with the task-token endpoint its callback loop expects (its
        # conditions are plain strings, annotated as the class that holds them).
        patterns = cast(
            "set[ResourceCondition]", {ResourceCondition.Sync, ResourceCondition.WaitForTaskToken}
        )
        super().__init__(supported_integration_patterns=patterns)

    def _get_supported_parameters(self) -> set[str]:
        return {"ProjectName", "EnvironmentVariablesOverride"}

    def _eval_service_task(
        self, env: Any, resource_runtime_part: Any, normalised_parameters: Any, state_credentials: Any
    ) -> str:
        STARTS.append((self.resource.api_action, normalised_parameters))
        outcome = OUTCOMES[normalised_parameters["ProjectName"]].pop(0)
        if outcome is refused:
            raise _failure(env, "CodeBuild.AccountLimitExceededException", "concurrent build limit reached")
        env.stack.append({"Build": {"Id": f"{normalised_parameters['ProjectName']}:1"}})
        self._outcome = outcome
        return self.resource.resource_arn

    def _build_sync_resolver(
        self, env: Any, resource_runtime_part: Any, normalised_parameters: Any, state_credentials: Any
    ) -> Callable[[], Any]:
        outcome = self._outcome

        def resolve() -> Any:
            result = outcome(normalised_parameters)
            if isinstance(result, Exception):
                raise _failure(env, "States.TaskFailed", str(result))
            return result

        return resolve


def _failure(env: Any, error: str, cause: str) -> FailureEventException:
    details = TaskFailedEventDetails(error=error, cause=cause, resource="codebuild", resourceType="codebuild")
    return FailureEventException(
        FailureEvent(
            env=env,
            error_name=StatesErrorName(typ=StatesErrorNameType.StatesTaskFailed)
            if error == "States.TaskFailed"
            else CustomErrorName(error),
            event_type=HistoryEventType.TaskFailed,
            # EventDetails is a total TypedDict in moto's annotations; its own events fill in one key.
            event_details=cast(EventDetails, {"taskFailedEventDetails": details}),
        )
    )


def refused(parameters: dict[str, Any]) -> Any:  # a start CodeBuild refuses (a stopped build still ending)
    raise AssertionError("never resolved")


def built(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"Build": {"Id": "ModelBuildProject:1", "BuildStatus": "SUCCEEDED"}}


def succeeded(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"Build": {"Id": f"{parameters['ProjectName']}:2", "BuildStatus": "SUCCEEDED"}}


def failed(build_id: str) -> Outcome:
    return lambda parameters: RuntimeError(json.dumps({"Build": {"Id": build_id, "BuildStatus": "FAILED"}}))


def running(parameters: dict[str, Any]) -> None:
    return None  # still running: the interpreter polls again


class Handle(http.server.BaseHTTPRequestHandler):
    signals: list[dict[str, Any]] = []

    def do_PUT(self) -> None:
        Handle.signals.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def engine(
    monkeypatch: pytest.MonkeyPatch, default_synth: Synthesized, handler_client: Callable[..., Any]
) -> Iterator[Callable[..., dict[str, Any]]]:
    server = http.server.HTTPServer(("127.0.0.1", 0), Handle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/handle?X-Amz-Signature=secret"
    original = state_task_factory.state_task_service_for
    monkeypatch.setattr(
        state_task_factory, "state_task_service_for",
        lambda service_name: CodeBuildStandIn() if service_name == "codebuild" else original(service_name),
    )  # fmt: skip
    monkeypatch.setenv("STACK_ID", f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/Stack/1")
    stubs: dict[str, Stubber] = {}
    for service in ("cloudformation", "codebuild", "logs"):  # the function's own AWS calls
        stubs[service] = Stubber(handler_client(service, REGION))
        stubs[service].activate()

    def invoke(parameters: dict[str, Any], region: str, state_credentials: Any) -> dict[str, Any]:
        assert parameters["FunctionName"] == FUNCTION_ARN
        try:
            return {"StatusCode": 200, "Payload": handler.signal(json.loads(parameters["Payload"]))}
        except Exception as error:  # Lambda's own answer for an unhandled error
            return {"StatusCode": 200, "FunctionError": "Unhandled",
                    "Payload": {"errorType": type(error).__name__, "errorMessage": str(error)}}  # fmt: skip

    monkeypatch.setattr(lambda_eval_utils, "_invoke_lambda_function", invoke)
    Handle.signals, STARTS[:] = [], []

    def run(
        *,
        error_line: tuple[str, str] | None = None,
        built_before: bool = False,
        stop_after: float | None = None,
        timeout: int | None = None,
        **outcomes: list[Outcome],
    ) -> dict[str, Any]:
        OUTCOMES.clear()
        OUTCOMES.update({BUILD_PROJECT: outcomes.get("build", []), CHECK_PROJECT: outcomes.get("check", [])})
        stubs["cloudformation"].add_response(
            "describe_stack_resource",
            {"StackResourceDetail": {"LogicalResourceId": "Handle1", "ResourceType": "WaitConditionHandle",
                                     "PhysicalResourceId": url, "ResourceStatus": "CREATE_COMPLETE",
                                     "LastUpdatedTimestamp": "2026-01-01T00:00:00Z"}},
        )  # fmt: skip
        if error_line is not None:  # the failed build, and its log's first `error:` line
            build_id, line = error_line
            logs = {
                "groupName": "/aws/codebuild/stage",
                "streamName": "s1",
                "deepLink": "https://console/logs",
            }
            stubs["codebuild"].add_response(
                "batch_get_builds",
                {"builds": [{"id": build_id, "buildStatus": "FAILED", "logs": logs}]},
                {"ids": [build_id]},
            )
            stubs["logs"].add_response(
                "filter_log_events", {"events": [{"message": "pip noise"}, {"message": f"error: {line}"}]}
            )
        steps = definition(default_synth)
        for state in steps["States"].values():
            if timeout is not None and "TimeoutSeconds" in state:  # budgets are minutes: run with seconds
                state["TimeoutSeconds"] = timeout
            for retry in state.get("Retry", []):  # its interval, 20 s, is held by its own test
                retry["IntervalSeconds"] = 1
        with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
            s3 = boto3.client("s3", region_name=REGION)
            s3.create_bucket(Bucket=BUCKET)
            key = f"manifests/builds/{FINGERPRINT}/manifest.json"
            if built_before:
                s3.put_object(Bucket=BUCKET, Key=key, Body=b"{}")
            sfn = boto3.client("stepfunctions", region_name=REGION)
            machine = sfn.create_state_machine(
                name="engine", definition=json.dumps(steps), roleArn=f"arn:aws:iam::{ACCOUNT}:role/engine"
            )["stateMachineArn"]
            run_input = {"Fingerprint": FINGERPRINT, "Handle": "Handle1", "BuildManifestKey": key}
            arn = sfn.start_execution(stateMachineArn=machine, name="run", input=json.dumps(run_input))[
                "executionArn"
            ]
            started = time.monotonic()
            while (execution := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
                if stop_after is not None and time.monotonic() - started > stop_after:
                    sfn.stop_execution(executionArn=arn, cause="its deployment moved on")
                    stop_after = None
                assert time.monotonic() - started < 30
                time.sleep(0.1)
            try:
                history = sfn.get_execution_history(executionArn=arn)["events"]
            except TypeError as error:  # moto's race, below: this run's history cannot be read
                raise _HistoryRace from error
        return {"status": execution["status"], "history": json.dumps(history, default=str)}

    def run_again_on_a_race(**arguments: Any) -> dict[str, Any]:
        # Under a busy `make test`, moto once recorded a TaskScheduled event whose timeoutInSeconds was the
        # state's input, and the history failed to serialise ("int() argument must be ... not 'dict'"). moto
        # evaluates TimeoutSeconds on the execution's evaluation stack; a concurrent use of that stack is the
        # likely cause (not confirmed). Such a run is made again from the start; every assertion applies to
        # the run whose history was read.
        for _ in range(HISTORY_RACE_TRIES - 1):
            try:
                return run(**arguments)
            except _HistoryRace:
                Handle.signals.clear()
                STARTS.clear()
        return run(**arguments)

    yield run_again_on_a_race
    server.shutdown()
    for stub in stubs.values():
        stub.deactivate()


def test_success_builds_then_checks_the_candidate_then_signals_success(engine: Callable[..., Any]) -> None:
    result = engine(build=[built], check=[succeeded])
    assert result["status"] == "SUCCEEDED"
    assert [(action, p["ProjectName"]) for action, p in STARTS] == [
        ("startBuild", BUILD_PROJECT),
        ("startBuild", CHECK_PROJECT),
    ]
    # Both stages get the fingerprint and the execution's name, nothing else: the check finds each build
    # shard's candidate under them (store.stages).
    for _, started in STARTS:
        variables = {v["Name"]: v["Value"] for v in started["EnvironmentVariablesOverride"]}
        assert variables == {"MODEL_BUILD_FINGERPRINT": FINGERPRINT, "MODEL_BUILD_RUN": "run"}
    assert [s["Status"] for s in Handle.signals] == ["SUCCESS"]
    # The handle's URL is in no execution history: the function reads it and returns only the outcome.
    assert "secret" not in result["history"] and "127.0.0.1" not in result["history"]


def test_a_fingerprint_built_before_starts_no_build_and_signals_at_once(engine: Callable[..., Any]) -> None:
    assert engine(built_before=True)["status"] == "SUCCEEDED"
    assert STARTS == [] and [s["Status"] for s in Handle.signals] == ["SUCCESS"]


def test_a_refused_start_is_retried(engine: Callable[..., Any], default_synth: Synthesized) -> None:
    # StopBuild then StartBuild at once under ConcurrentBuildLimit 1: the retry starts it 20 s later (the
    # interpreter runs it 1 s later).
    result = engine(build=[refused, built], check=[succeeded])
    assert result["status"] == "SUCCEEDED" and len(STARTS) == 3
    states = definition(default_synth)["States"]
    retried = {name for name, state in states.items() if REFUSED_START in str(state.get("Retry"))}
    retry = {"ErrorEquals": [REFUSED_START], "IntervalSeconds": 20, "MaxAttempts": 2, "BackoffRate": 2}
    assert retried == {"ModelBuild", "ServingCheck"}
    assert all(states[name]["Retry"] == [retry] for name in retried)


def test_a_failed_build_signals_failure_with_its_error_line_and_never_checks(
    engine: Callable[..., Any],
) -> None:
    line = "resnet50/onnx: export failed: boom"
    result = engine(build=[failed("ModelBuildProject:9")], error_line=("ModelBuildProject:9", line))
    assert result["status"] == "FAILED"
    assert [p["ProjectName"] for _, p in STARTS] == [BUILD_PROJECT]
    (signal,) = Handle.signals
    assert signal["Status"] == "FAILURE"
    assert signal["Reason"] == f"model build ModelBuildProject:9 failed: {line}; logs: https://console/logs"


def test_a_failed_check_signals_failure_naming_the_check(engine: Callable[..., Any]) -> None:
    line = "resnet50-onnx.tar.gz: Triton did not load it"
    result = engine(
        build=[built], check=[failed("ServingCheckProject:3")], error_line=("ServingCheckProject:3", line)
    )
    assert result["status"] == "FAILED"
    (signal,) = Handle.signals
    assert (
        signal["Reason"] == f"serving check ServingCheckProject:3 failed: {line}; logs: https://console/logs"
    )


def test_a_stage_past_its_budget_times_out_and_signals_failure(engine: Callable[..., Any]) -> None:
    result = engine(build=[running], timeout=1)
    assert result["status"] == "FAILED"
    (signal,) = Handle.signals
    assert (
        signal["Status"] == "FAILURE" and "model build did not end within its 35 minutes" in signal["Reason"]
    )


def test_a_stopped_execution_signals_nothing(engine: Callable[..., Any]) -> None:
    # A cancelled deploy deletes the run, whose Delete stops the execution; Step Functions then cancels the
    # running build (best-effort, documented for `.sync`), which this interpreter does not model.
    result = engine(build=[running], stop_after=1.0)
    assert result["status"] == "ABORTED"
    assert Handle.signals == [] and len(STARTS) == 1


@pytest.mark.parametrize("path", ["success", "build failure", "check failure", "timeout"])
def test_the_handles_url_is_in_no_log_line_of_the_function_and_no_execution_history(
    engine: Callable[..., Any], capsys: pytest.CaptureFixture[str], path: str
) -> None:
    """The function used the URL (one signal reached it), yet neither what it printed (its log group) nor the
    execution's history (its input, every state's input and output: what the state machine's log group
    holds at level ALL) names it, on every path that signals."""
    line = "resnet50/onnx: export failed"
    runs: dict[str, dict[str, Any]] = {
        "success": {"build": [built], "check": [succeeded]},
        "build failure": {"build": [failed("ModelBuildProject:9")],
                          "error_line": ("ModelBuildProject:9", line)},
        "check failure": {"build": [built], "check": [failed("ServingCheckProject:3")],
                          "error_line": ("ServingCheckProject:3", line)},
        "timeout": {"build": [running], "timeout": 1},
    }  # fmt: skip
    result = engine(**runs[path])
    assert len(Handle.signals) == 1
    printed = capsys.readouterr()
    assert "signalled Handle1" in printed.out  # the function's log line is there, with the handle's id only
    for part in ("X-Amz-Signature", "secret", "127.0.0.1"):
        assert part not in printed.out + printed.err and part not in result["history"]

"""The whole run, as `triton-mme acceptance` makes it: one line per check, the JSON report, the exit status;
and docs/acceptance.md shows the report of exactly this run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from acceptance_support import ALL_AT_ONCE_EVENTS, REGION, STACK, FakeClock, healthy_stack

from triton_mme.acceptance.report import GROUPS, AcceptanceReport
from triton_mme.acceptance.runner import run_acceptance
from triton_mme.acceptance.stack import StackError
from triton_mme.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = REPO_ROOT / "docs" / "acceptance.md"
START_MARK, END_MARK = "<!-- stubbed-report:start -->", "<!-- stubbed-report:end -->"


class _Session:
    """boto3.Session as the command makes it, handing out the stubbed clients."""

    def __init__(self, clients: Any) -> None:
        self.region_name = REGION
        self._clients = {
            "cloudformation": clients.cloudformation,
            "sagemaker": clients.sagemaker,
            "sagemaker-runtime": clients.runtime,
            "s3": clients.s3,
            "cloudwatch": clients.cloudwatch,
            "application-autoscaling": clients.autoscaling,
            "logs": clients.logs,
            "stepfunctions": clients.stepfunctions,
        }

    def client(self, service: str, **_: Any) -> Any:
        return self._clients[service]


def command(monkeypatch: pytest.MonkeyPatch, clients: Any, report: Path) -> int:
    import boto3

    monkeypatch.setattr(boto3, "Session", lambda **_: _Session(clients))
    return main(["acceptance", "--stack", STACK, "--report", str(report), "--metrics-wait-s", "0"])


def test_a_healthy_stack_passes_every_check_and_exits_0(
    s3: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clients = healthy_stack(s3, not_ready=0)
    assert command(monkeypatch, clients, tmp_path / "report.json") == 0
    out = capsys.readouterr().out.splitlines()
    report = AcceptanceReport.model_validate_json((tmp_path / "report.json").read_text())
    assert report.passed
    assert [line for line in out if line.startswith(("PASS", "FAIL", "CANNOT TELL"))] == [
        c.line() for c in report.checks
    ]
    assert {check.group for check in report.checks} == set(GROUPS)
    assert out[-2] == report.summary() and report.summary().endswith("0 failed: accepted")


def test_an_update_that_fell_back_fails_the_run_with_exit_1(
    s3: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clients = healthy_stack(s3, not_ready=0, events=ALL_AT_ONCE_EVENTS)
    assert command(monkeypatch, clients, tmp_path / "report.json") == 1
    captured = capsys.readouterr()
    failed = [line for line in captured.out.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and failed[0].startswith("FAIL strategy/last-update: ")
    assert "SageMaker updated all at once" in failed[0]
    assert captured.err.strip() == "error: 1 acceptance check(s) failed"
    report = json.loads((tmp_path / "report.json").read_text())
    assert [c["name"] for c in report["checks"] if not c["passed"]] == ["last-update"]


def test_an_update_without_events_cannot_tell_and_does_not_fail_the_run(
    s3: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clients = healthy_stack(s3, not_ready=0, events=[])
    assert command(monkeypatch, clients, tmp_path / "report.json") == 0
    captured = capsys.readouterr()
    undecided = [line for line in captured.out.splitlines() if line.startswith("CANNOT TELL")]
    assert len(undecided) == 1 and undecided[0].startswith("CANNOT TELL strategy/last-update: ")
    assert not [line for line in captured.out.splitlines() if line.startswith("FAIL")]
    assert captured.err.strip() == "warning: 1 acceptance check(s) cannot tell"
    report = AcceptanceReport.model_validate_json((tmp_path / "report.json").read_text())
    assert report.summary().endswith("0 failed, 1 cannot tell: accepted")


def test_a_stack_without_the_output_is_one_line(s3: Any) -> None:
    from acceptance_support import stubbed

    clients = healthy_stack(s3)
    cloudformation, stubber = stubbed("cloudformation")
    stubber.add_response(
        "describe_stacks",
        {"Stacks": [{"StackName": STACK, "CreationTime": "2026-01-01", "StackStatus": "UPDATE_COMPLETE"}]},
    )
    with pytest.raises(
        StackError, match=r"^stack TritonMultiModelEndpoint has no AcceptanceSettings output; "
    ):
        run_acceptance(
            STACK,
            clients.__class__(**{**clients.__dict__, "cloudformation": cloudformation}),
            metrics_wait_s=0,
        )


def stubbed_report(s3: Any) -> str:
    """The docs' example: the healthy stack's run with two ModelNotReady answers, as printed, and the JSON
    of its first check."""
    clock = FakeClock()
    lines: list[str] = []
    report = run_acceptance(
        STACK,
        healthy_stack(s3),
        region=REGION,
        timing=clock.timing,
        metrics_wait_s=600,
        progress=lambda check: lines.append(check.line()),
    )
    first = json.dumps(report.checks[0].model_dump(mode="json"), indent=2, sort_keys=True)
    return "\n".join(
        [
            "```text",
            f"$ triton-mme acceptance --stack {STACK} --region {REGION}",
            *lines,
            report.summary(),
            "report: acceptance-report.json",
            "```",
            "",
            "The first of the report's `checks` in `acceptance-report.json`:",
            "",
            "```json",
            first,
            "```",
        ]
    )


def test_the_docs_show_the_report_of_the_stubbed_run(s3: Any) -> None:
    """Set ACCEPTANCE_DOCS_UPDATE=1 to rewrite the block after an intended change of the report."""
    text = DOCS.read_text(encoding="utf-8")
    head, _, rest = text.partition(START_MARK)
    _, _, tail = rest.partition(END_MARK)
    block = f"{START_MARK}\n{stubbed_report(s3)}\n{END_MARK}"
    if os.environ.get("ACCEPTANCE_DOCS_UPDATE") == "1":
        DOCS.write_text(f"{head}{block}{tail}", encoding="utf-8")
        text = DOCS.read_text(encoding="utf-8")
    assert START_MARK in text and END_MARK in text
    assert f"{head}{block}{tail}" == text, "docs/acceptance.md: rerun with ACCEPTANCE_DOCS_UPDATE=1"

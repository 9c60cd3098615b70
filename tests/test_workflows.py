"""The GitHub workflows: linted with actionlint, and checked for what reviewers rely on."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

WORKFLOWS = Path(__file__).resolve().parents[1] / ".github" / "workflows"


def _load(name: str) -> dict[str, Any]:
    # PyYAML reads the bare key `on` as True (YAML 1.1); GitHub reads it as the string "on".
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    document["on"] = document.pop(True)
    return dict(document)


def _steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [step for step in job["steps"] if str(step.get("uses", "")).startswith(action + "@")]


def test_actionlint_finds_nothing() -> None:
    actionlint = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    files = sorted(str(path) for path in WORKFLOWS.glob("*.yml"))
    assert files, "no workflow files found"
    result = subprocess.run([actionlint, "-no-color", *files], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_pull_request_workflow_tests_then_posts_one_sticky_diff() -> None:
    workflow = _load("pull-request.yml")
    assert "pull_request" in workflow["on"]
    assert workflow["permissions"] == {"contents": "read"}
    test_job, diff_job = workflow["jobs"]["test"], workflow["jobs"]["diff"]
    runs = [step.get("run", "") for step in test_job["steps"]]
    assert "make synth" in runs and "make test" in runs
    assert diff_job["needs"] == "test"
    assert diff_job["permissions"]["id-token"] == "write"
    assert diff_job["permissions"]["pull-requests"] == "write"
    (credentials,) = _steps_using(diff_job, "aws-actions/configure-aws-credentials")
    assert credentials["with"]["role-to-assume"] == "${{ vars.CDK_DIFF_ROLE_ARN }}"
    assert any("make --silent diff" in step.get("run", "") for step in diff_job["steps"])
    (comment,) = _steps_using(diff_job, "marocchino/sticky-pull-request-comment")
    assert comment["with"]["header"] == "cdk-diff"


def test_main_branch_deploys_with_an_oidc_role_and_never_in_parallel() -> None:
    workflow = _load("deploy.yml")
    assert workflow["on"]["push"]["branches"] == ["main"]
    assert workflow["concurrency"]["cancel-in-progress"] is False
    job = workflow["jobs"]["deploy"]
    assert job["permissions"]["id-token"] == "write"
    (credentials,) = _steps_using(job, "aws-actions/configure-aws-credentials")
    assert credentials["with"]["role-to-assume"] == "${{ vars.CDK_DEPLOY_ROLE_ARN }}"
    runs = [step.get("run", "") for step in job["steps"]]
    assert runs.index("make test") < runs.index("make preflight") < runs.index("make deploy")
    # The read-only checks run with the deploy role's credentials, after they are configured.
    assert job["steps"].index(credentials) < runs.index("make preflight")


def test_the_acceptance_checks_run_right_after_the_deploy_and_can_fail_it() -> None:
    steps = _load("deploy.yml")["jobs"]["deploy"]["steps"]
    runs = [step.get("run", "") for step in steps]
    acceptance = runs.index("make acceptance")
    assert acceptance == runs.index("make deploy") + 1
    assert not steps[acceptance].get("continue-on-error"), "a failed check must fail the workflow"
    (kept,) = _steps_using({"steps": steps}, "actions/upload-artifact")
    assert kept["if"] == "always()" and kept["with"]["path"] == "acceptance-report.json"
    assert steps.index(kept) > acceptance


@pytest.mark.parametrize(("name", "job"), [("pull-request.yml", "test"), ("deploy.yml", "deploy")])
def test_unprivileged_user_namespaces_are_allowed_before_the_tests(name: str, job: str) -> None:
    """The local Triton's isolation needs them; Ubuntu 24.04 runners restrict them through AppArmor."""
    steps = _load(name)["jobs"][job]["steps"]
    names = [step.get("name", "") for step in steps]
    allow = steps[names.index("Allow unprivileged user namespaces")]
    assert "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in allow["run"]
    assert names.index("Allow unprivileged user namespaces") < [s.get("run") for s in steps].index(
        "make test"
    )


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yml")), ids=lambda p: p.name)
def test_no_long_lived_keys(path: Path) -> None:
    text = path.read_text()
    for forbidden in ("aws-access-key-id", "aws-secret-access-key", "AWS_ACCESS_KEY_ID", "AWS_SECRET"):
        assert forbidden not in text

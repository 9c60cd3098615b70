"""The GitHub workflows: linted with actionlint, and checked for what reviewers rely on."""

from __future__ import annotations

import re
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
    assert job["environment"] == "production"
    first = _steps_using(job, "aws-actions/configure-aws-credentials")[0]
    assert first["with"]["role-to-assume"] == "${{ vars.CDK_DEPLOY_ROLE_ARN }}"
    runs = [step.get("run", "") for step in job["steps"]]
    assert runs.index("make preflight") < runs.index("make deploy")
    # The read-only checks run with the deploy role's credentials, after they are configured.
    assert job["steps"].index(first) < runs.index("make preflight")


def test_the_tests_run_in_a_job_without_credentials_before_the_deploy() -> None:
    jobs = _load("deploy.yml")["jobs"]
    assert jobs["deploy"]["needs"] == "test"
    test_job = jobs["test"]
    assert "make test" in [step.get("run") for step in test_job["steps"]]
    assert "make test" not in [step.get("run") for step in jobs["deploy"]["steps"]]
    # Nothing in the test job may ask for a token or credentials: the workflow grants only contents: read.
    assert "permissions" not in test_job and _load("deploy.yml")["permissions"] == {"contents": "read"}
    assert not _steps_using(test_job, "aws-actions/configure-aws-credentials")


@pytest.mark.parametrize("name", ["deploy.yml", "pull-request.yml"])
def test_the_oidc_token_is_granted_only_to_jobs_that_assume_a_role(name: str) -> None:
    for job in _load(name)["jobs"].values():
        assumes = bool(_steps_using(job, "aws-actions/configure-aws-credentials"))
        assert (job.get("permissions", {}).get("id-token") == "write") == assumes


@pytest.mark.parametrize("name", ["deploy.yml", "pull-request.yml"])
def test_every_role_session_lasts_one_hour(name: str) -> None:
    for job in _load(name)["jobs"].values():
        for step in _steps_using(job, "aws-actions/configure-aws-credentials"):
            assert step["with"]["role-duration-seconds"] == 3600


def test_the_acceptance_checks_run_with_the_stacks_acceptance_role_and_can_fail_the_deploy() -> None:
    steps = _load("deploy.yml")["jobs"]["deploy"]["steps"]
    runs = [step.get("run", "") for step in steps]
    acceptance = runs.index("make acceptance")
    assert acceptance > runs.index("make deploy")
    assert not steps[acceptance].get("continue-on-error"), "a failed check must fail the workflow"
    credentials = _steps_using({"steps": steps[:acceptance]}, "aws-actions/configure-aws-credentials")
    # The last credentials before it are the acceptance role's, chained from a fresh deploy-role session
    # and read from the stack's output, never the deploy role itself.
    chained, fresh = credentials[-1], credentials[-2]
    assert chained["with"]["role-chaining"] is True
    role = steps[[s.get("id") for s in steps].index("acceptance-role")]
    assert chained["with"]["role-to-assume"] == "${{ steps.acceptance-role.outputs.arn }}"
    assert "make --silent acceptance-role" in role["run"]
    assert steps.index(fresh) < steps.index(role) < steps.index(chained)
    assert fresh["with"]["role-to-assume"] == "${{ vars.CDK_DEPLOY_ROLE_ARN }}"
    (kept,) = _steps_using({"steps": steps}, "actions/upload-artifact")
    assert kept["if"] == "always()" and kept["with"]["path"] == "acceptance-report.json"
    assert steps.index(kept) > acceptance


def test_the_make_target_reads_the_output_the_stack_defines() -> None:
    from triton_mme_cdk.stack import ACCEPTANCE_ROLE_OUTPUT

    makefile = (WORKFLOWS.parents[1] / "Makefile").read_text()
    assert f"OutputKey=='{ACCEPTANCE_ROLE_OUTPUT}'" in makefile


PINNED = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+(\.\d+){2}$")


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yml")), ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_with_its_tag(path: Path) -> None:
    uses = [line.split("uses:", 1)[1].strip() for line in path.read_text().splitlines() if "uses:" in line]
    assert uses
    unpinned = [use for use in uses if not PINNED.match(use)]
    assert not unpinned, f"pin by full commit SHA with '# vX.Y.Z': {unpinned}"


def test_one_action_one_commit_across_the_workflows() -> None:
    commits: dict[str, set[str]] = {}
    for path in WORKFLOWS.glob("*.yml"):
        for line in path.read_text().splitlines():
            if "uses:" in line:
                action, _, pin = line.split("uses:", 1)[1].strip().partition("@")
                commits.setdefault(action, set()).add(pin)
    assert all(len(pins) == 1 for pins in commits.values()), commits


def test_no_diff_runs_or_comments_for_pull_requests_from_forks() -> None:
    workflow = _load("pull-request.yml")
    assert "pull_request_target" not in workflow["on"]
    for name, job in workflow["jobs"].items():
        if _steps_using(job, "marocchino/sticky-pull-request-comment") or _steps_using(
            job, "aws-actions/configure-aws-credentials"
        ):
            assert job["if"] == "github.event.pull_request.head.repo.full_name == github.repository", name


@pytest.mark.parametrize(("name", "job"), [("pull-request.yml", "test"), ("deploy.yml", "test")])
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

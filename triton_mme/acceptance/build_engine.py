"""First-deploy verdicts on what no AWS document settles about the build engine (docs/deploy.md, "The build
engine"), read from the newest successful execution of the stack's build state machine, one line each:

- `batch-on-gpu`: CodeBuild ran a build batch (`startBuildBatch.sync`, buildRunners > 1) on the GPU project.

The stages hand the candidate over in the model store (store.stages), not through CodeBuild's results, so
nothing about those results is left to decide.
"""

from __future__ import annotations

from typing import Any

from triton_mme.acceptance.report import FIRST_DEPLOY, Check, cannot_tell, passed


def build_engine_verdicts(stepfunctions: Any, state_machine_arn: str) -> list[Check]:
    executions = stepfunctions.list_executions(
        stateMachineArn=state_machine_arn, statusFilter="SUCCEEDED", maxResults=1
    )["executions"]
    if not executions:
        why = "no successful execution of the build state machine yet: every build was built before"
        return [
            cannot_tell(
                FIRST_DEPLOY, "batch-on-gpu", expected="a build batch ran", seen="no execution", why=why
            )
        ]
    arn = executions[0]["executionArn"]
    events = stepfunctions.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    scheduled = [
        e["taskScheduledEventDetails"]["resource"] for e in events if "taskScheduledEventDetails" in e
    ]
    resources = {resource.rpartition(":")[2] for resource in scheduled}
    checks = []
    if "startBuildBatch.sync" in resources:
        checks.append(
            passed(FIRST_DEPLOY, "batch-on-gpu", expected="a build batch ran", seen=f"{arn} ran batches")
        )
    elif "startBuild.sync" in resources:
        checks.append(
            cannot_tell(
                FIRST_DEPLOY,
                "batch-on-gpu",
                expected="a build batch ran",
                seen="single builds",
                why="buildRunners=1: no batch ran; deploy once with buildRunners > 1 to decide",
            )
        )
    else:
        checks.append(
            cannot_tell(
                FIRST_DEPLOY,
                "batch-on-gpu",
                expected="a build batch ran",
                seen=f"{arn}: no build ran (built before)",
                why="the deployed build was built before: rerun after a deployment that builds",
            )
        )
    return checks

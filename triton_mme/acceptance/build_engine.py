"""First-deploy verdicts on what no AWS document settles about the build engine (docs/deploy.md, "The build
engine"), read from the newest successful execution of the stack's build state machine, one line each:

- `batch-on-gpu`: CodeBuild ran a build batch (`startBuildBatch.sync`, buildRunners > 1) on the GPU project;
- `exported-candidate`: the `.sync` result of the build stage carried its exported candidate digest to the
  serving check (StartBuild's `ExportedEnvironmentVariables`, or every shard's through BatchGetBuilds).
"""

from __future__ import annotations

import json
from typing import Any

from triton_mme.acceptance.report import FIRST_DEPLOY, Check, cannot_tell, failed, passed

FIX = "docs/deploy.md#the-build-engine says what to change; open the execution in the Step Functions console"


def build_engine_verdicts(stepfunctions: Any, state_machine_arn: str) -> list[Check]:
    executions = stepfunctions.list_executions(
        stateMachineArn=state_machine_arn, statusFilter="SUCCEEDED", maxResults=1
    )["executions"]
    if not executions:
        why = "no successful execution of the build state machine yet: every build was built before"
        return [
            cannot_tell(FIRST_DEPLOY, name, expected=expected, seen="no execution", why=why)
            for name, expected in (("batch-on-gpu", "a build batch ran"), ("exported-candidate", "a digest"))
        ]
    arn = executions[0]["executionArn"]
    events = stepfunctions.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    scheduled = [
        e["taskScheduledEventDetails"]["resource"] for e in events if "taskScheduledEventDetails" in e
    ]
    resources = {resource.rpartition(":")[2] for resource in scheduled}
    exited = {
        e["stateExitedEventDetails"]["name"]: json.loads(e["stateExitedEventDetails"].get("output") or "{}")
        for e in events
        if "stateExitedEventDetails" in e
    }
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
    built = exited.get("ModelBuild", {}).get("Built", {})
    handed = exited.get("ShardCandidates", {}).get("Candidates") or built.get("Candidate")
    if "ModelBuild" not in exited:
        checks.append(
            cannot_tell(
                FIRST_DEPLOY,
                "exported-candidate",
                expected="a digest",
                seen=f"{arn}: no build ran (built before)",
                why="the deployed build was built before: rerun after a deployment that builds",
            )
        )
    elif handed:
        seen = f"{arn} handed {str(handed)[:16]}"
        checks.append(passed(FIRST_DEPLOY, "exported-candidate", expected="a digest", seen=seen))
    else:
        checks.append(
            failed(FIRST_DEPLOY, "exported-candidate", expected="a digest", seen=f"{arn}: {built}", fix=FIX)
        )
    return checks

"""The build fanned out over several GPU runners (`buildRunners` > 1): both stages become CodeBuild batch
builds of balanced shards, the state machine starts them with startBuildBatch.sync, and the shard file travels
with the build's source."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from synth_support import Synthesized

from triton_mme.catalog import load_catalog
from triton_mme.catalog.shards import SHARDS_FILE_NAME, read_shards
from triton_mme.sizing.build_time import catalog_shards
from triton_mme_cdk.constructs.build.build_spec import SHARD_VARIABLE, build_spec
from triton_mme_cdk.constructs.build.serving_check_spec import (
    PUBLISH_TASK,
    PUBLISH_VARIABLE,
    serving_check_spec,
)

SynthWith = Callable[..., Synthesized]


@pytest.fixture(scope="module")
def fanned(synth_with: SynthWith) -> Synthesized:
    return synth_with(build_runners=4)


def project(synth: Synthesized, path: str) -> dict[str, Any]:
    (resource,) = [
        r["Properties"]
        for r in synth.resources.values()
        if r["Type"] == "AWS::CodeBuild::Project"
        and path in json.dumps(r["Properties"].get("Description", ""))
    ]
    return resource


def spec_of(properties: dict[str, Any]) -> dict[str, Any]:
    return json.loads(properties["Source"]["BuildSpec"])


def test_one_runner_keeps_single_builds(default_synth: Synthesized) -> None:
    build = project(default_synth, "Builds the model catalog")
    assert "BuildBatchConfig" not in build and build["ConcurrentBuildLimit"] == 1
    assert "batch" not in spec_of(build)
    assert "startBuildBatch" not in json.dumps(default_synth.resources)


def test_both_stages_become_batches_of_the_catalogs_shards(fanned: Synthesized) -> None:
    # The default catalog has two models: four runners give two shards.
    build = project(fanned, "Builds the model catalog")
    check = project(fanned, "Checks every archive")
    build_spec_ = spec_of(build)
    assert [task["identifier"] for task in build_spec_["batch"]["build-list"]] == ["shard_0", "shard_1"]
    assert build_spec_["batch"]["fast-fail"] is True
    # The shard's cache lookup and its build both take the shard's models only.
    for command in build_spec_["phases"]["build"]["commands"][:2]:
        assert f'--shard "${SHARD_VARIABLE}" --shard-file {SHARDS_FILE_NAME}' in command
    graph = spec_of(check)["batch"]["build-graph"]
    assert [task["identifier"] for task in graph] == ["shard_0", "shard_1", PUBLISH_TASK]
    assert graph[-1]["depend-on"] == ["shard_0", "shard_1"]
    assert build["BuildBatchConfig"]["Restrictions"] == {
        "MaximumBuildsAllowed": 2, "ComputeTypesAllowed": ["BUILD_GENERAL1_SMALL"]
    }  # fmt: skip
    assert check["BuildBatchConfig"]["Restrictions"]["MaximumBuildsAllowed"] == 3
    assert build["ConcurrentBuildLimit"] == 4 and "ServiceRole" in build["BuildBatchConfig"]
    # A batch's timeout bounds it from submission: the source download's queueing, then every level's
    # queueing and timeout (the check's graph has two: the shards, then `publish`).
    assert build["BuildBatchConfig"]["TimeoutInMins"] == 5 + (5 + 30)
    assert check["BuildBatchConfig"]["TimeoutInMins"] == 5 + 2 * (5 + 15)
    assert json.dumps(fanned.resources).count(":states:::codebuild:startBuildBatch.sync") == 2


def test_the_state_machine_may_run_and_stop_batches_of_its_two_projects_only(fanned: Synthesized) -> None:
    actions: set[str] = set()
    for logical_id, policy in fanned.template.find_resources("AWS::IAM::Policy").items():
        if "ModelBuildEngine" not in logical_id:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            listed = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(a.startswith("codebuild:") for a in listed):
                actions.update(listed)
                assert statement["Resource"] != "*"
    assert {
        "codebuild:StartBuildBatch",
        "codebuild:StopBuildBatch",
        "codebuild:BatchGetBuildBatches",
    } <= actions
    # Neither a batch list nor a build list: no run is ever found again by scanning.
    assert not {a for a in actions if a.startswith("codebuild:List")}


def test_the_shard_file_travels_with_the_build_and_matches_the_balanced_shards(fanned: Synthesized) -> None:
    sources = list(fanned.assembly_dir.glob(f"asset.*/{SHARDS_FILE_NAME}"))
    assert len(sources) == 1
    assert read_shards(sources[0]) == catalog_shards(load_catalog("models.yaml"), 4)


def test_shards_in_the_buildspecs_are_their_own_tasks() -> None:
    spec = build_spec(tensorrt=False, shards=3)
    assert [t["env"]["variables"][SHARD_VARIABLE] for t in spec["batch"]["build-list"]] == ["0", "1", "2"]
    check = serving_check_spec(image_python_runs_check=True, shards=3)
    (command,) = check["phases"]["build"]["commands"]
    # The publish task publishes the union; a shard's task checks its own candidate, each command after the
    # one before it succeeded.
    assert command.startswith(f'if [ -n "${PUBLISH_VARIABLE}" ]; then ')
    publish, shard = command.split("; else ")
    assert (
        'publish-build --fingerprint "$MODEL_BUILD_FINGERPRINT" --run "$MODEL_BUILD_RUN" --shards 3 '
        in publish
    )
    assert shard.count(" && ") == 2 and "publish-build" not in shard
    run = '--fingerprint "$MODEL_BUILD_FINGERPRINT" --run "$MODEL_BUILD_RUN"'
    assert f'fetch-candidate {run} --shard "${SHARD_VARIABLE}"' in shard
    build = build_spec(tensorrt=False, shards=3)["phases"]["build"]["commands"]
    assert build[-1].startswith(f'python -m triton_mme stage-candidate {run} --shard "${SHARD_VARIABLE}" ')


def test_the_run_names_each_models_digest_so_cdk_diff_shows_which_models_change(
    default_synth: Synthesized,
) -> None:
    (trigger,) = default_synth.template.find_resources("Custom::ModelBuild").values()
    catalog = load_catalog("models.yaml")
    assert trigger["Metadata"]["Models"] == {entry.name: entry.digest for entry in catalog.models}
    changed = catalog.entry("roberta-large").model_copy(update={"max_batch_size": 16})
    assert changed.digest != catalog.entry("roberta-large").digest
    assert catalog.entry("resnet50").digest == load_catalog("models.yaml").entry("resnet50").digest
    assert "Models" not in trigger["Properties"]  # the handlers never receive the map


def test_every_fanned_out_store_command_parses_with_the_shipped_command_line() -> None:
    from triton_mme.cli import parser

    build = build_spec(tensorrt=False, shards=3)["phases"]["build"]["commands"]
    (check,) = serving_check_spec(image_python_runs_check=True, shards=3)["phases"]["build"]["commands"]
    publish, shard = check.removeprefix(f'if [ -n "${PUBLISH_VARIABLE}" ]; then ').split("; else ")
    commands = [*build, publish, *shard.removesuffix("; fi").split(" && ")]
    staged = [c for c in commands if "-candidate " in c or " publish-build " in c]
    assert len(staged) == 3
    for command in staged:
        # The runner's shell gives each task its index: shard 1 here.
        arguments = (
            command.split(" -m triton_mme ")[1].replace(f"${SHARD_VARIABLE}", "1").replace('"', "").split()
        )
        parsed = parser().parse_args(arguments)  # an unknown option exits with status 2
        assert parsed.run == "$MODEL_BUILD_RUN", command
        assert (parsed.shards if " publish-build " in command else parsed.shard) == (
            3 if " publish-build " in command else 1
        ), command

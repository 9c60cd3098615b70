"""`plan` plans the stack `cdk deploy` would create: the settings' counts, GPU target, Triton tag and the
instance types synthesis accepts for the catalog, each with where it came from."""

from __future__ import annotations

from pathlib import Path

import pytest
from planner_support import manifest_of, write_manifest

from triton_mme.cli import main
from triton_mme.core.platform import PLATFORM
from triton_mme.planner.stack import StackError, plan_for
from triton_mme_cdk.stack_plan import stack_plan

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT = "default (triton_mme_cdk/settings/)"


def test_the_default_stack_gives_its_counts_target_and_the_types_synth_accepts() -> None:
    chosen = plan_for(REPO_ROOT, default_triton_tag=PLATFORM.images.default_tag.value, read_stack=stack_plan)
    assert (chosen.min_instances.value, chosen.max_instances.value) == (2, 5)
    assert chosen.min_instances.origin == f"minInstanceCount, {DEFAULT}"
    assert chosen.gpu_utilization_target.value == 60.0
    # The default catalog builds TensorRT on the A10G runner: synth refuses every type but ml.g5.*.
    assert chosen.instance_types.value and all(t.startswith("ml.g5.") for t in chosen.instance_types.value)
    assert chosen.refused[0][0] == "ml.g4dn.xlarge" and "builderComputeType=SMALL" in chosen.refused[0][1]
    assert chosen.deployed == "ml.g5.xlarge"


def test_context_and_options_outrank_the_defaults_and_say_so() -> None:
    chosen = plan_for(
        REPO_ROOT,
        ["minInstanceCount=3", "initialInstanceCount=3"],
        max_instances=8,
        default_triton_tag=PLATFORM.images.default_tag.value,
        read_stack=stack_plan,
    )
    assert chosen.min_instances.value == 3 and chosen.min_instances.origin == "minInstanceCount, -c"
    assert chosen.max_instances.value == 8 and chosen.max_instances.origin == "--max-instances"
    assert chosen.lines()[1] == "  instances 3..8 (min: minInstanceCount, -c; max: --max-instances)"


def test_a_bad_context_value_is_one_line_naming_the_setting_the_user_set() -> None:
    with pytest.raises(
        StackError, match=r"maxInstanceCount=1 does not fit minInstanceCount=2 \(the default\)"
    ):
        plan_for(
            REPO_ROOT,
            ["maxInstanceCount=1"],
            default_triton_tag=PLATFORM.images.default_tag.value,
            read_stack=stack_plan,
        )


def test_outside_a_checkout_the_planner_defaults_apply(tmp_path: Path) -> None:
    chosen = plan_for(tmp_path, default_triton_tag=PLATFORM.images.default_tag.value, read_stack=stack_plan)
    assert chosen.stack_root is None and chosen.min_instances.value == 1
    assert chosen.instance_types.value == () and chosen.min_instances.origin == "planner default"


def test_without_a_reader_the_planner_reads_no_stack_even_in_a_checkout() -> None:
    """The planner takes the app's reader from its caller; it never loads the app itself."""
    chosen = plan_for(REPO_ROOT, default_triton_tag=PLATFORM.images.default_tag.value)
    assert chosen.stack_root is None and chosen.min_instances.origin == "planner default"


def test_the_plan_command_plans_the_stacks_types_and_minimum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO_ROOT)
    manifest = write_manifest(tmp_path / "build", manifest_of(4))
    traffic = tmp_path / "traffic.yaml"
    traffic.write_text("service_ms: 5\nzipf:\n  total_rate_per_s: 1\n")
    argv = ["plan", "--traffic", str(traffic), "--manifest", str(manifest), "--simulated-requests", "2000"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Stack: the settings `cdk deploy` reads in .; it deploys ml.g5.xlarge\n")
    rows = [line.split() for line in printed.splitlines() if line.startswith("ml.")]
    assert rows and all(row[0].startswith("ml.g5.") for row in rows)
    # At least the stack's two instances, as `cdk deploy` creates them.
    assert "Recommendation: ml.g5.xlarge x 2: " in printed

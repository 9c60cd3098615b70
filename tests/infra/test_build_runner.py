"""The GPU build runner and the build-before-deploy trigger, synthesized in a small stack of their own."""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import region_info
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from triton_mme.core.platform import (
    PLATFORM,
    dlc_registry_account,
)
from triton_mme.model_build import cache
from triton_mme_cdk.constructs.build.build_runner import ModelBuildRunner
from triton_mme_cdk.constructs.build.build_spec import CUDA_COMPAT_SETUP
from triton_mme_cdk.constructs.store.model_store import ModelStore
from triton_mme_cdk.runner_files import REQUIREMENTS_DIR
from triton_mme_cdk.settings import BuildRunnerSettings

REPO_ROOT = Path(__file__).resolve().parents[2]
FLAGS = {
    k: v for k, v in json.loads((REPO_ROOT / "cdk.json").read_text())["context"].items() if k.startswith("@")
}


def runner_stack(
    outdir: Path, *, source_root: Path | None = None, **overrides: Any
) -> tuple[Template, ModelBuildRunner, Path]:
    app = cdk.App(outdir=str(outdir), context=FLAGS)
    stack = cdk.Stack(app, "Runner", env=cdk.Environment(region="eu-west-1"))
    options: dict[str, Any] = {
        "catalog": (source_root or REPO_ROOT) / "models.yaml",
        "runner": BuildRunnerSettings(timeout_minutes=25),
        "triton_image_tag": "25.04-py3",
        "tensorrt": True,
        **overrides,
    }
    runner = ModelBuildRunner(
        stack, "Build", store=ModelStore(stack, "Store"), source_root=source_root, **options
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # fails on any unacknowledged cdk-nag finding
    return Template.from_stack(stack), runner, outdir


@pytest.fixture(scope="module")
def default(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, ModelBuildRunner, Path]:
    return runner_stack(tmp_path_factory.mktemp("runner"))


def project_of(template: Template) -> dict[str, Any]:
    (project,) = template.find_resources("AWS::CodeBuild::Project").values()
    return dict(project["Properties"])


def spec_of(template: Template) -> dict[str, Any]:
    return dict(json.loads(project_of(template)["Source"]["BuildSpec"]))


def variables_of(template: Template) -> dict[str, Any]:
    return {v["Name"]: v["Value"] for v in project_of(template)["Environment"]["EnvironmentVariables"]}


def test_project_runs_on_the_small_gpu_with_the_cuda12_image_and_settings(default: Any) -> None:
    project = project_of(default[0])
    environment = project["Environment"]
    assert environment["Type"] == "LINUX_GPU_CONTAINER"
    assert environment["ComputeType"] == "BUILD_GENERAL1_SMALL"
    image = json.dumps(environment["Image"])
    assert "763104351884.dkr.ecr." in image
    assert "/pytorch-training:2.8.0-gpu-py312-cu129-ubuntu22.04-ec2" in image
    assert project["TimeoutInMinutes"] == 25
    assert project["QueuedTimeoutInMinutes"] == 5
    # One build at a time: CodeBuild answers a second StartBuild with an error instead of queueing it.
    assert project["ConcurrentBuildLimit"] == 1
    assert project["Source"]["Type"] == "S3"
    variables = variables_of(default[0])
    assert variables["TENSORRT_REQUIREMENT"] == "tensorrt-cu12==10.9.0.34"
    assert variables["TRITON_IMAGE_TAG"] == "25.04-py3"
    assert variables["MODEL_CATALOG"] == "models.yaml"
    assert (variables["MODEL_PREFIX"], variables["MANIFEST_PREFIX"]) == ("models/", "manifests/")


def test_buildspec_sets_up_and_checks_cuda_before_installing_tensorrt_and_building(default: Any) -> None:
    phases = spec_of(default[0])["phases"]
    install, build = phases["install"]["commands"], phases["build"]["commands"]
    assert install == [
        "nvidia-smi || true",
        CUDA_COMPAT_SETUP,
        "python -m pip install --quiet -r requirements-build.txt",
        "python -m triton_mme gpu-check",
        'python -m pip install --quiet --extra-index-url https://pypi.nvidia.com "$TENSORRT_REQUIREMENT"',
    ]
    steps = [re.match(r"python -m triton_mme (\S+)", command)[1] for command in build[:5]]  # type: ignore[index]
    # What earlier runners built of unchanged entries first; then archives and their files, their cache
    # records, then, last, the candidate manifest for the serving check: the build stage never publishes a
    # build manifest (only the check does) nor moves the live one.
    assert steps == ["fetch-cache", "build", "upload", "publish-cache", "stage-candidate"]
    for looking_up in build[:2]:
        assert '--catalog "$MODEL_CATALOG" --triton-tag "$TRITON_IMAGE_TAG"' in looking_up
    assert "fetch-cache " in build[0] and "--to build/models " in build[0]
    assert "upload --archives-only " in build[2]
    # Last, and nothing after it: the candidate, recorded under the fingerprint and the engine's run, where
    # the serving check finds it (no exported variable carries it).
    assert 'stage-candidate --fingerprint "$MODEL_BUILD_FINGERPRINT" --run "$MODEL_BUILD_RUN" ' in build[4]
    assert len(build) == 5 and "exported-variables" not in spec_of(default[0])["env"]
    for store_step in (build[0], *build[2:5]):
        assert '--bucket "$MODEL_BUCKET"' in store_step and '--prefix "$MODEL_PREFIX"' in store_step
        assert '--manifest-prefix "$MANIFEST_PREFIX"' in store_step
    for publishing in build[2:5]:
        assert "--from build/models" in publishing


def test_every_publishing_step_parses_with_the_shipped_command_line(default: Any) -> None:
    from triton_mme.cli import parser

    commands = spec_of(default[0])["phases"]["build"]["commands"]
    store_steps = [command for command in commands if "--bucket" in command]
    assert len(store_steps) == 4
    for command in store_steps:
        arguments = command.removeprefix("python -m triton_mme ").replace('"', "").split()
        parsed = parser().parse_args(arguments)  # an unknown option exits with status 2
        assert parsed.bucket == "$MODEL_BUCKET", command
        assert str(getattr(parsed, "source", None) or parsed.to) == "build/models", command


def run_compat_setup(tmp_path: Path, driver: str, compat_driver: str | None) -> str:
    """CUDA_COMPAT_SETUP in bash with a fake nvidia-smi and CUDA_HOME: its output, then LD_LIBRARY_PATH."""
    bin_dir, cuda_home = tmp_path / "bin", tmp_path / "cuda"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\necho {driver}\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    if compat_driver:
        (cuda_home / "compat").mkdir(parents=True)
        (cuda_home / "compat" / f"libcuda.so.{compat_driver}").write_text("")
        (cuda_home / "compat" / "libcuda.so.1").symlink_to(f"libcuda.so.{compat_driver}")
    result = subprocess.run(
        ["bash", "-c", f'{CUDA_COMPAT_SETUP}; echo "LD_LIBRARY_PATH=${{LD_LIBRARY_PATH:-}}"'],
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CUDA_HOME": str(cuda_home),
             "LD_LIBRARY_PATH": "/opt/lib"},
        capture_output=True,
        text=True,
        check=True,
    )  # fmt: skip
    return result.stdout


def test_compat_setup_puts_the_compat_libraries_first_for_an_older_driver(tmp_path: Path) -> None:
    output = run_compat_setup(tmp_path, driver="470.256.02", compat_driver="575.51.03")
    assert output.splitlines()[0] == "NVIDIA driver: 470.256.02"
    assert f"LD_LIBRARY_PATH={tmp_path}/cuda/compat:/opt/lib" in output


@pytest.mark.parametrize(
    ("driver", "compat_driver"), [("580.65.06", "575.51.03"), ("575.51.03", "575.51.03")]
)
def test_compat_setup_leaves_a_driver_that_is_new_enough_alone(
    tmp_path: Path, driver: str, compat_driver: str
) -> None:
    output = run_compat_setup(tmp_path, driver=driver, compat_driver=compat_driver)
    assert output.splitlines() == [f"NVIDIA driver: {driver}", "LD_LIBRARY_PATH=/opt/lib"]


def test_compat_setup_finds_the_ngc_layout_of_the_triton_image(tmp_path: Path) -> None:
    # NGC images keep the libraries in compat/lib.real (triton-inference-server/server build.py).
    cuda_home = tmp_path / "cuda"
    (cuda_home / "compat" / "lib.real").mkdir(parents=True)
    (cuda_home / "compat" / "lib.real" / "libcuda.so.575.51.03").write_text("")
    (cuda_home / "compat" / "lib.real" / "libcuda.so.1").symlink_to("libcuda.so.575.51.03")
    output = run_compat_setup(tmp_path, driver="470.256.02", compat_driver=None)
    assert f"LD_LIBRARY_PATH={cuda_home}/compat/lib.real:/opt/lib" in output


def test_compat_setup_without_compat_libraries_changes_nothing(tmp_path: Path) -> None:
    output = run_compat_setup(tmp_path, driver="535.183.01", compat_driver=None)
    assert output.splitlines() == ["NVIDIA driver: 535.183.01", "LD_LIBRARY_PATH=/opt/lib"]


def test_cdk_build_image_accounts_agree_with_the_platform_table_in_every_gpu_build_region() -> None:
    # The project's image comes from CDK's own region -> DLC account facts; regions CDK lacks fail at deploy.
    for region in PLATFORM.regions.codebuild_gpu_regions.value:
        assert region_info.RegionInfo.get(region).dlc_repository_account == dlc_registry_account(region), (
            region
        )


def test_no_tensorrt_install_when_the_catalog_has_no_tensorrt(tmp_path: Path) -> None:
    template, _, _ = runner_stack(tmp_path, tensorrt=False)
    install = spec_of(template)["phases"]["install"]["commands"]
    assert not any("tensorrt" in command.lower() for command in install)


def test_large_runner_and_cuda13_tag_pick_the_v100_fleet_and_the_al2023_image(tmp_path: Path) -> None:
    # The construct maps what it is given; the settings refuse LARGE with today's images (test_settings).
    template, _, _ = runner_stack(
        tmp_path, runner=BuildRunnerSettings(compute_type="LARGE"), triton_image_tag="25.09-py3"
    )
    environment = project_of(template)["Environment"]
    assert environment["ComputeType"] == "BUILD_GENERAL1_LARGE"
    assert "/pytorch:2.12.1-cu130-amzn2023" in json.dumps(environment["Image"])
    assert variables_of(template)["TENSORRT_REQUIREMENT"] == "tensorrt-cu13==10.13.3.9"


def statements(template: Template, logical_id_part: str) -> list[dict[str, Any]]:
    found = []
    for logical_id, policy in template.find_resources("AWS::IAM::Policy").items():
        if logical_id_part in logical_id:
            found.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return found


def actions(statement: dict[str, Any]) -> list[str]:
    return [statement["Action"]] if isinstance(statement["Action"], str) else list(statement["Action"])


def joined(resource: Any) -> str:
    """`<StoreBucket.Arn>/models/*` from an Fn::Join of the bucket's ARN and a key pattern."""
    separator, parts = resource["Fn::Join"]
    return separator.join(f"<{p['Fn::GetAtt'][0][:11]}>" if isinstance(p, dict) else p for p in parts)


def test_runner_writes_archives_its_build_manifest_and_content_addressed_files_only(default: Any) -> None:
    runner_statements = statements(default[0], "BuildProjectRole")
    writes = [
        s
        for s in runner_statements
        if s["Effect"] == "Allow" and any(a.startswith(("s3:Put", "s3:Delete", "s3:*")) for a in actions(s))
    ]
    assert len(writes) == 1
    assert set(actions(writes[0])) == {"s3:PutObject", "s3:AbortMultipartUpload"}
    assert sorted(joined(r) for r in writes[0]["Resource"]) == [
        "<StoreBucket>/manifests/*-????????????????.json",  # labels-<hash>.json, tokenizer-<hash>.json
        "<StoreBucket>/manifests/*-????????????????.npz",  # golden-<hash>.npz
        "<StoreBucket>/manifests/build-cache/*.json",  # the build cache records of its archives
        "<StoreBucket>/manifests/builds/*/candidate-*.json",
        "<StoreBucket>/manifests/builds/*/runs/*/shard-*.json",  # which candidate a shard staged in a run
        "<StoreBucket>/models/*",
    ]
    everything = json.dumps(runner_statements)
    assert "s3:DeleteObject" not in everything and '"s3:*"' not in everything


def test_runner_may_write_neither_a_build_manifest_nor_a_serving_report(default: Any) -> None:
    allowed = [
        joined(r)
        for s in statements(default[0], "BuildProjectRole")
        if s["Effect"] == "Allow" and "s3:PutObject" in actions(s)
        for r in s["Resource"]
    ]
    for key in (f"manifests/builds/{'a' * 64}/manifest.json", f"manifests/{'b' * 64}.serving-report.json"):
        assert not [p for p in allowed if fnmatch.fnmatchcase(f"<StoreBucket>/{key}", p)], key


def test_runner_may_never_write_the_live_manifest(default: Any) -> None:
    (deny,) = [s for s in statements(default[0], "BuildProjectRole") if s["Effect"] == "Deny"]
    assert actions(deny) == ["s3:PutObject"]
    # The live manifest, and the operators' intents (writes under manifests/ reach them: IAM's * matches /).
    assert sorted(joined(r) for r in deny["Resource"]) == [
        "<StoreBucket>/manifests/intents/*",
        "<StoreBucket>/manifests/manifest.json",
    ]
    allowed = [
        joined(r)
        for s in statements(default[0], "BuildProjectRole")
        if s["Effect"] == "Allow" and "s3:PutObject" in actions(s)
        for r in s["Resource"]
    ]
    # None of the allowed patterns matches the live manifest either (IAM's * and ? as fnmatch's).
    assert not [p for p in allowed if fnmatch.fnmatchcase("<StoreBucket>/manifests/manifest.json", p)]
    for key in (
        "models/resnet50-onnx-0123456789abcdef.tar.gz",
        "manifests/labels-0123456789abcdef.json",
        "manifests/golden-0123456789abcdef.npz",
        f"manifests/builds/{'a' * 64}/candidate-{'b' * 64}.json",
    ):
        assert [p for p in allowed if fnmatch.fnmatchcase(f"<StoreBucket>/{key}", p)], key


def test_runner_reads_back_only_the_store_prefixes_and_its_own_source(default: Any) -> None:
    reads = [s for s in statements(default[0], "BuildProjectRole") if "s3:GetObject" in actions(s)]
    assert len(reads) == 1
    assert sorted(joined(r) for r in reads[0]["Resource"]) == [
        "<StoreBucket>/manifests/*",
        "<StoreBucket>/models/*",
    ]
    source_reads = [s for s in statements(default[0], "BuildProjectRole") if "s3:GetObject*" in actions(s)]
    (source_read,) = source_reads
    asset_key = f"/{default[1].source.asset_hash}.zip"
    assert any(asset_key in json.dumps(r) for r in source_read["Resource"])


def test_build_logs_go_to_their_own_group_with_the_retention_setting(default: Any) -> None:
    template = default[0]
    logs_config = project_of(template)["LogsConfig"]["CloudWatchLogs"]
    assert logs_config["Status"] == "ENABLED"
    group_id = logs_config["GroupName"]["Ref"]
    assert template.to_json()["Resources"][group_id]["Properties"]["RetentionInDays"] == 30


SHIPPED_PACKAGES = ("core", "catalog", "archive_inspection", "sizing", "model_build", "store")


def test_source_asset_holds_the_runner_packages_catalog_and_requirements_only(default: Any) -> None:
    _, runner, outdir = default
    files = {p.relative_to(outdir / f"asset.{runner.source.asset_hash}").as_posix()
             for p in (outdir / f"asset.{runner.source.asset_hash}").rglob("*") if p.is_file()}  # fmt: skip
    assert {
        "models.yaml",
        "requirements-build.txt",
        "triton_mme/cli.py",
        "triton_mme/arguments.py",
        "triton_mme/catalog/schema.py",
    } <= files
    packages = {f.split("/")[1] for f in files if f.count("/") >= 2 and f.startswith("triton_mme/")}
    assert packages == set(SHIPPED_PACKAGES)
    outside = {f for f in files if not f.startswith("triton_mme/")} - {
        "models.yaml",
        "requirements-build.txt",
    }
    assert outside == set()
    assert not any("__pycache__" in f or f.endswith(".pyc") or "/tests/" in f for f in files)


def _imports_of_ours(package: str) -> dict[str, set[str]]:
    """Each package of triton_mme that `package` imports -> the files that import it."""
    found: dict[str, set[str]] = {}
    for path in (REPO_ROOT / "triton_mme" / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("triton_mme.") and name.split(".")[1] not in ("arguments", "cli"):
                    found.setdefault(name.split(".")[1], set()).add(str(path.relative_to(REPO_ROOT)))
    return found


def test_the_shipped_packages_import_only_what_is_shipped() -> None:
    """A module the runner runs that moves out of a shipped package fails here, not on the GPU runner."""
    unshipped = {
        used: files
        for package in SHIPPED_PACKAGES
        for used, files in _imports_of_ours(package).items()
        if used not in SHIPPED_PACKAGES
    }
    assert unshipped == {}


def test_the_build_cache_key_covers_every_package_the_build_imports() -> None:
    """A change to code the build runs (a source it resolves, a shipped config) rebuilds, never reuses."""
    imported, new = set(), {"model_build"}
    while new:
        imported |= new
        new = {used for package in new for used in _imports_of_ours(package)} - imported
    assert {path.name for path in cache.BUILD_CODE_DIRS} == imported


def fake_project(root: Path, catalog: str) -> Path:
    """A copy of the project's Python packages, requirements and a catalog."""
    shutil.copytree(
        REPO_ROOT / "triton_mme", root / "triton_mme", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO_ROOT / "requirements.txt", root / "requirements.txt")
    shutil.copy(REQUIREMENTS_DIR / "requirements-build.txt", root / "requirements-build.txt")
    (root / "models.yaml").write_text(catalog)
    return root


def test_fingerprint_follows_the_catalog_and_nothing_else(tmp_path: Path) -> None:
    catalog = (REPO_ROOT / "models.yaml").read_text()
    first = runner_stack(tmp_path / "a", source_root=fake_project(tmp_path / "pa", catalog))[1].fingerprint
    same = runner_stack(tmp_path / "b", source_root=fake_project(tmp_path / "pb", catalog))[1].fingerprint
    changed = runner_stack(
        tmp_path / "c", source_root=fake_project(tmp_path / "pc", catalog.replace("128", "64"))
    )[1].fingerprint
    assert first == same
    assert changed != first


def test_an_edit_to_the_client_changes_neither_the_asset_nor_a_build_cache_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = (REPO_ROOT / "models.yaml").read_text()
    project = fake_project(tmp_path / "project", catalog)
    monkeypatch.setattr(
        cache, "BUILD_CODE_DIRS", tuple(project / "triton_mme" / path.name for path in cache.BUILD_CODE_DIRS)
    )
    before = runner_stack(tmp_path / "a", source_root=project)[1].source.asset_hash, cache.build_code_hash()

    for edited in ("client/inputs.py", "local_triton/server.py"):
        with (project / "triton_mme" / edited).open("a") as source:
            source.write("\n# an edit\n")
    after_client = (
        runner_stack(tmp_path / "b", source_root=project)[1].source.asset_hash,
        cache.build_code_hash(),
    )
    with (project / "triton_mme/core/naming.py").open("a") as source:
        source.write("\n# an edit\n")
    after_core = (
        runner_stack(tmp_path / "c", source_root=project)[1].source.asset_hash,
        cache.build_code_hash(),
    )

    assert after_client == before
    assert after_core[0] != before[0] and after_core[1] != before[1]


def test_a_missing_catalog_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"catalog \S+missing\.yaml is not a catalog file; allowed: a path"):
        runner_stack(tmp_path, catalog=tmp_path / "missing.yaml")


def test_a_catalog_anywhere_on_disk_is_copied_to_the_root_of_the_source(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "team-models.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text((REPO_ROOT / "models.yaml").read_text())
    template, runner, outdir = runner_stack(tmp_path / "out", catalog=elsewhere)
    staged = outdir / f"asset.{runner.source.asset_hash}" / "team-models.yaml"
    assert staged.read_text() == elsewhere.read_text()
    template.has_resource_properties(
        "AWS::CodeBuild::Project",
        {
            "Environment": {
                "EnvironmentVariables": Match.array_with(
                    [{"Name": "MODEL_CATALOG", "Type": "PLAINTEXT", "Value": "team-models.yaml"}]
                )
            }
        },
    )

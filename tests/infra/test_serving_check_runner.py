"""The serving check stage, synthesized in a small stack of its own: the endpoint's image from the same
mapping, a role that can publish reports and build manifests only, and the buildspec's order."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks
from test_build_runner import FLAGS, actions, joined, statements

from triton_mme_cdk.constructs.build.build_spec import CUDA_COMPAT_SETUP
from triton_mme_cdk.constructs.build.serving_check import ServingCheckRunner
from triton_mme_cdk.constructs.endpoint.triton_endpoint import CONTAINER_ENVIRONMENT
from triton_mme_cdk.constructs.endpoint.triton_image import TritonImage
from triton_mme_cdk.constructs.store.model_store import ModelStore
from triton_mme_cdk.settings import BuildRunnerSettings

BUILD_FINGERPRINT = "b" * 64


def check_stack(
    outdir: Path, *, tag: str = "25.04-py3", **overrides: Any
) -> tuple[Template, ServingCheckRunner]:
    app = cdk.App(outdir=str(outdir), context=FLAGS)
    stack = cdk.Stack(app, "Check", env=cdk.Environment(region="eu-west-1"))
    options: dict[str, Any] = {
        "runner": BuildRunnerSettings(),
        "build_fingerprint": BUILD_FINGERPRINT,
        "container_environment": CONTAINER_ENVIRONMENT,
        **overrides,
    }
    check = ServingCheckRunner(
        stack,
        "Check",
        store=ModelStore(stack, "Store"),
        image=TritonImage(stack, "Image", tag=tag),
        **options,
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # fails on any unacknowledged cdk-nag finding
    return Template.from_stack(stack), check


@pytest.fixture(scope="module")
def default(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, ServingCheckRunner]:
    return check_stack(tmp_path_factory.mktemp("check"))


def project_of(template: Template) -> dict[str, Any]:
    (project,) = template.find_resources("AWS::CodeBuild::Project").values()
    return dict(project["Properties"])


def test_the_project_runs_the_endpoints_image_from_its_registry_mapping_on_a_gpu(default: Any) -> None:
    template, _ = default
    environment = project_of(template)["Environment"]
    assert (
        environment["Type"] == "LINUX_GPU_CONTAINER" and environment["ComputeType"] == "BUILD_GENERAL1_SMALL"
    )
    assert environment["ImagePullCredentialsType"] == "SERVICE_ROLE"
    image = [
        {
            "Fn::FindInMap": [
                Match.string_like_regexp("ImageRegistryAccounts"),
                {"Ref": "AWS::Region"},
                "account",
            ]
        },
        ".dkr.ecr.",
        {"Ref": "AWS::Region"},
        ".",
        {"Ref": "AWS::URLSuffix"},
        "/sagemaker-tritonserver:25.04-py3",
    ]
    template.has_resource_properties(
        "AWS::CodeBuild::Project", {"Environment": Match.object_like({"Image": {"Fn::Join": ["", image]}})}
    )
    variables = {v["Name"]: v["Value"] for v in environment["EnvironmentVariables"]}
    assert variables["TRITON_IMAGE_TAG"] == "25.04-py3"
    assert {k: variables[k] for k in CONTAINER_ENVIRONMENT} == CONTAINER_ENVIRONMENT
    # The role may pull that one repository, in the mapped account.
    pulls = [s for s in statements(template, "CheckProjectRole") if "ecr:BatchGetImage" in actions(s)]
    assert "repository/sagemaker-tritonserver" in json.dumps(pulls)


def test_the_check_runs_under_its_own_timeout_and_the_groups_queueing_limit(tmp_path: Path) -> None:
    runner = BuildRunnerSettings(timeout_minutes=20, serving_check_timeout_minutes=9, queue_timeout_minutes=6)
    project = project_of(check_stack(tmp_path, runner=runner)[0])
    assert (project["TimeoutInMinutes"], project["QueuedTimeoutInMinutes"]) == (9, 6)


def spec_of(template: Template) -> dict[str, Any]:
    return dict(json.loads(project_of(template)["Source"]["BuildSpec"]))


def test_the_buildspec_sets_up_cuda_then_fetches_checks_reports_and_publishes_the_manifest_last(
    default: Any,
) -> None:
    spec = spec_of(default[0])
    install, build = spec["phases"]["install"]["commands"], spec["phases"]["build"]["commands"]
    assert install[:2] == ["nvidia-smi || true", CUDA_COMPAT_SETUP]
    assert install[-1] == 'python3 -m triton_mme cuda-check --triton-tag "$TRITON_IMAGE_TAG"'
    assert "python3 -m pip install --quiet -r requirements-check.txt" in install
    steps = [re.match(r"python3 -m triton_mme (\S+)", command)[1] for command in build]  # type: ignore[index]
    # archives (by the build stage) -> serving check -> report -> build manifest, last.
    assert steps == ["fetch-candidate", "serving-check", "publish-report", "publish-build"]
    assert (
        'fetch-candidate --fingerprint "$MODEL_BUILD_FINGERPRINT" --run "$MODEL_BUILD_RUN" --to' in build[0]
    )
    assert "--server sagemaker --from build/models" in build[1]
    assert 'publish-build --fingerprint "$MODEL_BUILD_FINGERPRINT" ' in build[3]
    assert spec["env"]["variables"]["PIP_BREAK_SYSTEM_PACKAGES"] == "1"


def test_the_report_key_lives_in_the_build_folder_not_the_image_users_home(
    default: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from triton_mme.arguments import report_key_file
    from triton_mme.core.report_key import REPORT_KEY_ENV, signing_key

    variables = spec_of(default[0])["env"]["variables"]
    monkeypatch.setenv(REPORT_KEY_ENV, variables[REPORT_KEY_ENV])
    monkeypatch.setenv("HOME", "/nonexistent")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert len(signing_key(report_key_file())) == 32
    assert (tmp_path / variables[REPORT_KEY_ENV]).stat().st_mode & 0o777 == 0o600


def test_every_step_parses_with_the_shipped_command_line(default: Any) -> None:
    from triton_mme.cli import parser

    for command in spec_of(default[0])["phases"]["build"]["commands"]:
        arguments = command.removeprefix("python3 -m triton_mme ").replace('"', "").split()
        parser().parse_args(arguments)  # an unknown option exits with status 2


def test_the_role_writes_serving_reports_indexes_and_build_manifests_only(default: Any) -> None:
    template, _ = default
    granted = statements(template, "CheckProjectRole")
    writes = [
        s
        for s in granted
        if s["Effect"] == "Allow" and any(a.startswith(("s3:Put", "s3:Delete")) for a in actions(s))
    ]
    assert len(writes) == 1 and actions(writes[0]) == ["s3:PutObject"]
    allowed = sorted(joined(r) for r in writes[0]["Resource"])
    assert allowed == [
        "<StoreBucket>/manifests/*.index.json",
        "<StoreBucket>/manifests/*.records.jsonl",
        "<StoreBucket>/manifests/*.serving-report.json",
        "<StoreBucket>/manifests/builds/*/manifest.json",
    ]
    for key, writable in (
        (f"manifests/{'a' * 64}.serving-report.json", True),
        (f"manifests/{'a' * 64}.index.json", True),
        (f"manifests/{'a' * 64}.records.jsonl", True),
        (f"manifests/{'a' * 64}.json", False),
        (f"manifests/builds/{'a' * 64}/manifest.json", True),
        ("manifests/manifest.json", False),
        ("models/resnet50-onnx-0123456789abcdef.tar.gz", False),
        (f"manifests/builds/{'a' * 64}/candidate-{'b' * 64}.json", False),
        ("manifests/golden-0123456789abcdef.npz", False),
    ):
        assert bool([p for p in allowed if fnmatch.fnmatchcase(f"<StoreBucket>/{key}", p)]) is writable, key
    (deny,) = [s for s in granted if s["Effect"] == "Deny"]
    # The live manifest, and the operators' intents (writes under manifests/ reach them: IAM's * matches /).
    assert sorted(joined(r) for r in deny["Resource"]) == [
        "<StoreBucket>/manifests/intents/*",
        "<StoreBucket>/manifests/manifest.json",
    ]
    reads = [s for s in granted if "s3:GetObject" in actions(s)]
    assert sorted(joined(r) for r in reads[0]["Resource"]) == [
        "<StoreBucket>/manifests/*",
        "<StoreBucket>/models/*",
    ]
    assert "s3:DeleteObject" not in json.dumps(granted)


def test_the_source_holds_the_check_and_not_the_build_or_the_local_triton(
    default: Any, tmp_path: Path
) -> None:
    _, check = default
    outdir = Path(cdk.Stack.of(check).node.root.outdir)  # type: ignore[attr-defined]
    root = outdir / f"asset.{check.source.asset_hash}"
    files = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    packages = {f.split("/")[1] for f in files if f.count("/") >= 2 and f.startswith("triton_mme/")}
    assert packages == {"core", "archive_inspection", "client", "serving_check", "store"}
    assert {
        "requirements-check.txt",
        "requirements-uv.txt",
        "triton_mme/cli.py",
        "triton_mme/arguments.py",
    } <= files


def test_the_fingerprint_follows_the_build_and_the_check(tmp_path: Path) -> None:
    first = check_stack(tmp_path / "a")[1].fingerprint
    assert check_stack(tmp_path / "b")[1].fingerprint == first
    assert check_stack(tmp_path / "c", build_fingerprint="c" * 64)[1].fingerprint != first
    assert check_stack(tmp_path / "d", tag="25.09-py3")[1].fingerprint != first


def test_an_image_whose_python_is_too_old_gets_a_managed_cpython(tmp_path: Path) -> None:
    template, _ = check_stack(tmp_path, tag="24.05-py3")
    install = spec_of(template)["phases"]["install"]["commands"]
    assert install[2:5] == [
        "python3 -m pip install --quiet -r requirements-uv.txt",
        "python3 -m uv venv --python 3.12 /opt/serving-check",
        "python3 -m uv pip install --quiet --python /opt/serving-check/bin/python -r requirements-check.txt",
    ]
    assert spec_of(template)["phases"]["build"]["commands"][1].startswith(
        "/opt/serving-check/bin/python -m triton_mme serving-check"
    )

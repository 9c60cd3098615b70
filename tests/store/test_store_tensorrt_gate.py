"""The TensorRT gate of `add` (a plan cannot be loaded where it is added): only a serving report that
`serving-check` wrote and signed on this machine, naming the sha256 of the very file added, lets it in;
hand-written, edited, foreign and other archives' reports are refused in one line."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hostile_archives import named_by_content, write_layout
from store_support import BUCKET, one_line_error

from triton_mme.cli import main
from triton_mme.core.files import file_sha256
from triton_mme.core.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest, TensorSpec
from triton_mme.core.report_key import ReportKeyError, report_key, signing_key
from triton_mme.core.serving_report import BatchFigures, ServingReport
from triton_mme.serving_check import check, targets
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import read_published_manifest

PLAN_CONFIG = (
    'name: "m-tensorrt"\nplatform: "tensorrt_plan"\nmax_batch_size: 2\n'
    'input { name: "input" data_type: TYPE_FP32 dims: [4] }\n'
    'output { name: "output" data_type: TYPE_FP32 dims: [4] }\n'
)
ALLOWED = (
    "allowed only a report that triton-mme serving-check wrote and signed on this machine, for this file "
    "(run it here), or --unchecked-tensorrt (recorded as unchecked in the manifest)"
)


def _plan(directory: Path, model: bytes = b"arbitrary bytes, no plan") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    archive = write_layout(
        directory / "t.tar.gz",
        config=PLAN_CONFIG,
        model=model,
        model_dir="m-tensorrt",
        model_file="model.plan",
    )
    return named_by_content(archive, "m", "tensorrt")


def _add(archive: Path, report: Path) -> int:
    return main(["add", str(archive), "--bucket", BUCKET, "--name", "m", "--serving-report", str(report)])


class _GpuStandIn:
    """What `serving-check --server local` talks to, standing in for a GPU's Triton that loads the plan: the
    check's own unpacking, sha256 check, report and signature run as they do on a GPU."""

    server = "sagemaker-tritonserver:stand-in on a test GPU"
    gpu = "test GPU"
    on_gpu = True

    def __init__(self, **_: Any) -> None:
        ok = SimpleNamespace(ok=True)
        self.routes = SimpleNamespace(load=lambda *_: ok, unload=lambda *_: ok)

    def __enter__(self) -> _GpuStandIn:
        return self

    def __exit__(self, *_: Any) -> None:
        return None

    def prepare(self, target_model: str, model_dir: Path) -> None:
        return None

    def memory_used_mib(self) -> float | None:
        return None


@pytest.fixture
def checked_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A plan and the report `triton-mme serving-check` wrote of a build holding it."""
    build = tmp_path / "build"
    archive = _plan(build)
    record = ArchiveRecord(
        name="m", format="tensorrt", target_model=archive.name, sha256=file_sha256(archive),
        size_bytes=archive.stat().st_size, source="external", weights="external", max_batch_size=2,
        inputs=(TensorSpec(name="input", datatype="FP32", dims=(4,)),),
        outputs=(TensorSpec(name="output", datatype="FP32", dims=(4,)),),
    )  # fmt: skip
    (build / MANIFEST_FILE_NAME).write_text(Manifest(archives=(record,)).to_json(), encoding="utf-8")
    monkeypatch.setattr(targets, "LocalCpuTriton", _GpuStandIn)
    # No golden data to replay against a stand-in: the replay is the one part left out.
    monkeypatch.setattr(check, "_golden", lambda directory, record: None)
    timed = BatchFigures(
        batch_size=1, requests=1, latency_p50_ms=1.0, latency_p99_ms=1.0, throughput_per_s=1.0
    )
    monkeypatch.setattr(check, "_exercise", lambda *_, **__: (timed,))
    out = tmp_path / "serving-report.json"
    assert main(["serving-check", "--server", "local", "--from", str(build), "--out", str(out)]) == 0
    return archive, out


def test_a_report_the_serving_check_wrote_here_lets_the_plan_in(
    s3: Any, checked_report: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    archive, report = checked_report
    written = ServingReport.from_json(report.read_bytes())
    assert written.archives[0].sha256 == file_sha256(archive) and written.signature

    assert _add(archive, report) == 0, capsys.readouterr().err
    record = read_published_manifest(ModelStoreClient(s3, BUCKET)).find("m", "tensorrt")  # type: ignore[union-attr]
    assert str(record.details["checked"]).startswith("serving report ")


def test_a_hand_written_report_is_refused(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: six lines anyone can type."""
    archive = _plan(tmp_path / "plan")
    report = tmp_path / "report.json"
    report.write_text(
        "{\n"
        f'  "manifest_sha256": "{"0" * 64}",\n'
        '  "server": "sagemaker-tritonserver on L4",\n'
        f'  "archives": [{{"target_model": "{archive.name}", "name": "m", "format": "tensorrt",\n'
        f'                "passed": true, "sha256": "{file_sha256(archive)}"}}]\n'
        "}\n"
    )
    assert len(report.read_text().splitlines()) == 6

    assert _add(archive, report) == 1
    assert one_line_error(capsys) == f"error: {report}: the serving report is not signed; {ALLOWED}"
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None


@pytest.mark.parametrize("edit", ["server", "sha256", "signature"])
def test_an_edited_report_is_refused(
    s3: Any, checked_report: tuple[Path, Path], edit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    archive, report = checked_report
    document = json.loads(report.read_text())
    if edit == "server":
        document["server"] = "sagemaker-tritonserver:25.04 on H100"
    elif edit == "sha256":
        document["archives"][0]["sha256"] = "f" * 64
    else:
        document["signature"] = "0" * 64
    report.write_text(json.dumps(document))

    assert _add(archive, report) == 1
    assert one_line_error(capsys) == (
        f"error: {report}: the serving report's signature does not match (edited, or signed on another "
        f"machine); {ALLOWED}"
    )
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None


def test_a_report_signed_on_another_machine_is_refused(
    s3: Any,
    checked_report: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    archive, report = checked_report
    monkeypatch.setenv("TRITON_MME_REPORT_KEY_FILE", str(tmp_path / "elsewhere" / "report-key"))
    signing_key(tmp_path / "elsewhere" / "report-key")

    assert _add(archive, report) == 1
    assert "the serving report's signature does not match (edited, or signed on another machine)" in (
        one_line_error(capsys)
    )


def test_a_signed_report_naming_another_sha256_is_refused(
    s3: Any, tmp_path: Path, report_key_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from triton_mme.core.serving_report import ArchiveServing

    archive = _plan(tmp_path / "plan")
    served = ArchiveServing(
        target_model=archive.name, name="m", format="tensorrt", passed=True, sha256="f" * 64
    )
    signed = ServingReport(manifest_sha256="0" * 64, server="s", archives=(served,)).signed(
        signing_key(report_key_file)
    )
    report = tmp_path / "report.json"
    report.write_text(signed.to_json())

    assert _add(archive, report) == 1
    assert one_line_error(capsys) == (
        f"error: {report}: the serving report checked {archive.name} with sha256 ffffffffffffffff..., not "
        f"this file's {file_sha256(archive)[:16]}...; {ALLOWED}"
    )


def test_without_a_key_here_a_signed_report_is_refused(
    s3: Any, checked_report: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    archive, report = checked_report
    monkeypatch.setenv("TRITON_MME_REPORT_KEY_FILE", str(tmp_path / "none" / "report-key"))

    assert _add(archive, report) == 1
    assert "no report key on this machine" in one_line_error(capsys)
    assert not (tmp_path / "none").exists()  # the gate never makes a key


def test_the_key_is_made_once_readable_only_by_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "config" / "triton-mme" / "report-key"
    key = signing_key(path)

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert signing_key(path) == report_key(path) == key and len(key) == 32
    os.chmod(path, 0o644)
    with pytest.raises(ReportKeyError, match=r"only they may read \(mode 0644\); allowed mode 0600"):
        report_key(path)


def test_the_key_file_follows_the_environment_variable_then_xdg_config_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from triton_mme.arguments import report_key_file

    monkeypatch.setenv("TRITON_MME_REPORT_KEY_FILE", str(tmp_path / "k"))
    assert report_key_file() == tmp_path / "k"
    monkeypatch.delenv("TRITON_MME_REPORT_KEY_FILE")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert report_key_file() == tmp_path / "xdg" / "triton-mme" / "report-key"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert report_key_file() == tmp_path / "home" / ".config" / "triton-mme" / "report-key"


def test_old_reports_without_hash_or_signature_still_read() -> None:
    """The planner reads reports of schema 1: only the gate asks for the signature."""
    old = {"schema_version": 1, "manifest_sha256": "0" * 64, "server": "s",
           "archives": [{"target_model": "t", "name": "m", "format": "onnx", "passed": True}]}  # fmt: skip
    report = ServingReport.from_json(json.dumps(old))
    assert report.signature is None and report.archives[0].sha256 is None

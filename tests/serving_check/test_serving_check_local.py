"""The serving check against the local CPU Triton: the tiny build's archives pass, and each archive that goes
wrong the way real ones do fails with one line naming it and what Triton (or the comparison) said."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from serving_support import one_archive_build, output_declared_fp16, outputs_shifted

from triton_mme.cli import main
from triton_mme.core.manifest import Manifest
from triton_mme.core.serving_report import ServingReport
from triton_mme.core.tolerances import FP32
from triton_mme.serving_check.check import CheckSettings, check_build
from triton_mme.serving_check.targets import LocalCpuTriton

pytestmark = pytest.mark.timeout(600)
QUICK = CheckSettings(requests=2, warmup=1)


@pytest.fixture(scope="module")
def local(isolated: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCpuTriton]:
    with LocalCpuTriton(workdir=tmp_path_factory.mktemp("triton")) as target:
        yield target


@dataclass(frozen=True)
class WholeBuildCheck:
    """One run of the command over the whole tiny build, its own local Triton included: what it printed,
    its exit status and its report. Read by the tests below; the check of four archives runs once."""

    status: int
    printed: list[str]
    out: Path
    report: ServingReport


@pytest.fixture(scope="module")
def whole_build_check(
    built: tuple[Path, Manifest], isolated: None, tmp_path_factory: pytest.TempPathFactory
) -> WholeBuildCheck:
    build_dir, _ = built
    out = tmp_path_factory.mktemp("whole-build") / "report.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(["serving-check", "--server", "local", "--from", str(build_dir), "--out", str(out),
                       "--requests", str(QUICK.requests), "--warmup", str(QUICK.warmup)])  # fmt: skip
    report = ServingReport.from_json(out.read_bytes()) if out.is_file() else None
    assert report is not None, printed.getvalue()
    return WholeBuildCheck(status, printed.getvalue().splitlines(), out, report)


@pytest.mark.slow
def test_every_archive_of_the_build_passes_with_its_figures(
    built: tuple[Path, Manifest], whole_build_check: WholeBuildCheck
) -> None:
    _, manifest = built
    report = whole_build_check.report

    assert report.passed and report.manifest_sha256 == manifest.sha256
    assert [a.target_model for a in report.archives] == [a.target_model for a in manifest.archives]
    assert report.gpu is None and report.server.startswith("local CPU stand-in")
    for archive in report.archives:
        assert archive.passed and archive.error is None and archive.skipped is None
        assert archive.load_seconds is not None and archive.load_seconds > 0
        assert archive.gpu_memory_mib is None  # no GPU to measure on the CPU stand-in
        # Batch 1 and the largest batch: max_batch_size 4 carries far less than InvokeEndpoint's 6 MB.
        assert [b.batch_size for b in archive.batches] == [1, 4]
        assert all(
            b.requests == QUICK.requests and b.latency_p99_ms >= b.latency_p50_ms > 0 for b in archive.batches
        )
        assert archive.tolerance == {"atol": FP32.atol, "rtol": FP32.rtol}
        assert set(archive.max_abs_error) == {
            spec.name for spec in manifest.find(archive.name, archive.format).outputs
        }
        assert max(archive.max_abs_error.values()) <= FP32.atol


@pytest.mark.parametrize(
    ("case", "changes", "expected"),
    [
        (
            "config contradicts its graph",
            {"config_change": output_declared_fp16},
            "Triton did not load it: ",
        ),
        # Refused by the one model check before Triton is asked to load it.
        ("truncated model file", {"truncate_model": True}, "model.onnx is not an ONNX model"),
        (
            "reference mismatch",
            {"golden_change": outputs_shifted},
            "output 'output' differs from the reference by up to 1 at batch 1 (allowed atol 0.0001 + rtol "
            "0.001 x |reference|)",
        ),
    ],
)
def test_a_bad_archive_fails_with_one_line_naming_it(
    built: tuple[Path, Manifest],
    local: LocalCpuTriton,
    tmp_path: Path,
    case: str,
    changes: dict,
    expected: str,
) -> None:
    build_dir, record = one_archive_build(built, "tiny-cnn", "onnx", tmp_path / "build", **changes)

    report = check_build(build_dir, local, settings=QUICK)

    (result,) = report.archives
    assert not report.passed and report.failures == (result,)
    assert result.target_model == record.target_model
    assert result.error is not None and "\n" not in result.error
    assert result.error.startswith(expected), result.error
    if case == "config contradicts its graph":
        assert "config.pbtxt says TYPE_FP16, model.onnx has tensor(float)" in result.error
    if case != "reference mismatch":
        assert not result.batches and result.max_abs_error == {}


def test_the_archive_is_unloaded_after_a_failed_comparison(
    built: tuple[Path, Manifest], local: LocalCpuTriton, tmp_path: Path
) -> None:
    build_dir, record = one_archive_build(
        built, "tiny-cnn", "onnx", tmp_path / "b", golden_change=outputs_shifted
    )
    check_build(build_dir, local, settings=QUICK)
    # The same TargetModel loads again: the failed check did not leave it loaded.
    assert local.routes.unload(record.target_model).status != 200


def test_the_command_writes_the_report_and_stops_with_the_first_failure(
    built: tuple[Path, Manifest], isolated: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_dir, record = one_archive_build(
        built, "tiny-roberta", "torchscript", tmp_path / "b", truncate_model=True
    )
    out = tmp_path / "report.json"

    status = main(["serving-check", "--server", "local", "--from", str(build_dir), "--out", str(out),
                   "--requests", "1", "--warmup", "1"])  # fmt: skip

    assert status == 1
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1
    assert errors[0].startswith(
        f"error: serving check failed: {record.target_model}: model.pt is not a TorchScript archive"
    ) and errors[0].endswith("(1 of 1 archive failed)")
    report = ServingReport.from_json(out.read_bytes())
    assert report.failures[0].target_model == record.target_model


def test_the_command_checks_a_whole_build_and_prints_a_line_per_archive(
    built: tuple[Path, Manifest], whole_build_check: WholeBuildCheck
) -> None:
    _, manifest = built
    out, printed = whole_build_check.out, whole_build_check.printed

    assert whole_build_check.status == 0
    results = [line for line in printed[1:-1] if not line.startswith("  ")]
    assert [line.split()[0] for line in results] == ["passed"] * len(manifest.archives)
    assert printed[-1] == f"report  {out}"
    # Before each result, its phases as they start: unpack, load, compare per batch, time per batch.
    total = len(manifest.archives)
    first = manifest.archives[0].target_model
    phases = [line.strip() for line in printed[1:] if line.startswith(f"  1/{total} {first}: ")]
    assert phases[:2] == [
        f"1/{total} {first}: checking and unpacking the archive",
        f"1/{total} {first}: loading it in Triton",
    ]
    assert phases[-1].endswith(": 1 + 2 requests") and len(phases) == 6  # batches 1 and 4: compare, time
    assert json.loads(out.read_text())["manifest_sha256"] == manifest.sha256


def test_a_build_without_a_manifest_stops_before_any_server_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serving-check", "--server", "local", "--from", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"error: {tmp_path}/manifest.json: cannot read the build manifest (No such file or directory)\n"
    )

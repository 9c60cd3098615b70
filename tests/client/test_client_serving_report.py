"""The serving report beside a manifest, read where the manifest is: a build directory or the model store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from store_support import BUCKET

from triton_mme.client.manifest_source import ManifestError, ManifestSource
from triton_mme.core.manifest import Manifest
from triton_mme.core.serving_report import ServingReport

REPORT = ServingReport(manifest_sha256="a" * 64, server="local CPU stand-in")


def test_a_build_directory_without_a_report_has_none_and_with_one_reads_it(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(Manifest().to_json())
    source = ManifestSource(str(manifest))
    assert source.serving_report() is None
    (tmp_path / "serving-report.json").write_text(REPORT.model_dump_json())
    assert source.serving_report() == REPORT


def test_an_invalid_report_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "serving-report.json").write_text('{"server": "x"}')
    with pytest.raises(ManifestError) as caught:
        ManifestSource(str(tmp_path / "manifest.json")).serving_report()
    where = tmp_path / "serving-report.json"
    problem = "manifest_sha256: required field is missing"
    assert str(caught.value) == f"{where}: not a valid serving report ({problem})"


def test_the_model_store_without_a_report_has_none_and_with_one_reads_it(s3: Any) -> None:
    source = ManifestSource(f"s3://{BUCKET}/manifests/manifest.json", s3=s3)
    assert source.serving_report() is None
    s3.put_object(Bucket=BUCKET, Key="manifests/serving-report.json", Body=REPORT.model_dump_json().encode())
    assert source.serving_report() == REPORT


def test_an_unreadable_store_is_an_error_not_an_absent_report(s3: Any) -> None:
    with pytest.raises(
        ManifestError, match=r"^s3://no-such-bucket/serving-report\.json: cannot read it \(NoSuchBucket"
    ):
        ManifestSource("s3://no-such-bucket/manifest.json", s3=s3).serving_report()

"""A manifest's serving report, read where the manifest is: beside it in a build directory, by its digest in
the model store (the live pointer and a build's manifest alike)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from store_support import BUCKET

from triton_mme.client.manifest_source import ManifestError, ManifestSource
from triton_mme.core.locations import manifest_prefix_of, serving_report_key
from triton_mme.core.manifest import Manifest
from triton_mme.core.serving_report import ServingReport

REPORT = ServingReport(manifest_sha256="a" * 64, server="local CPU stand-in")


def test_a_build_directory_without_a_report_has_none_and_with_one_reads_it(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(Manifest().to_json())
    source = ManifestSource(str(manifest))
    assert source.serving_report(Manifest()) is None
    (tmp_path / "serving-report.json").write_text(REPORT.model_dump_json())
    assert source.serving_report(Manifest()) == REPORT


def test_an_invalid_report_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "serving-report.json").write_text('{"server": "x"}')
    with pytest.raises(ManifestError) as caught:
        ManifestSource(str(tmp_path / "manifest.json")).serving_report(Manifest())
    where = tmp_path / "serving-report.json"
    problem = "manifest_sha256: required field is missing"
    assert str(caught.value) == f"{where}: not a valid serving report ({problem})"


@pytest.mark.parametrize(
    "manifest_key", ["manifests/manifest.json", f"manifests/builds/{'f' * 64}/manifest.json"]
)
def test_the_model_store_reads_the_report_published_under_the_manifests_digest(
    s3: Any, manifest_key: str
) -> None:
    manifest = Manifest()
    source = ManifestSource(f"s3://{BUCKET}/{manifest_key}", s3=s3)
    assert source.serving_report(manifest) is None
    beside = manifest_key.rpartition("/")[0] + "/serving-report.json"
    s3.put_object(Bucket=BUCKET, Key=beside, Body=REPORT.model_dump_json().encode())
    assert source.serving_report(manifest) is None  # not where the check stage publishes it
    key = serving_report_key(manifest.sha256)
    assert key == f"manifests/{manifest.sha256}.serving-report.json"
    s3.put_object(Bucket=BUCKET, Key=key, Body=REPORT.model_dump_json().encode())
    assert source.serving_report(manifest) == REPORT


@pytest.mark.parametrize(
    ("key", "prefix"),
    [
        ("manifests/manifest.json", "manifests/"),
        (f"team/manifests/builds/{'0' * 64}/manifest.json", "team/manifests/"),
        (f"builds/{'0' * 64}/manifest.json", ""),
        ("manifest.json", ""),
        ("elsewhere/builds/not-a-fingerprint/manifest.json", "elsewhere/builds/not-a-fingerprint/"),
    ],
)
def test_the_manifest_prefix_of_a_key(key: str, prefix: str) -> None:
    assert manifest_prefix_of(key) == prefix


def test_an_unreadable_store_is_an_error_not_an_absent_report(s3: Any) -> None:
    manifest = Manifest()
    where = rf"s3://no-such-bucket/{manifest.sha256}\.serving-report\.json"
    with pytest.raises(ManifestError, match=rf"^{where}: cannot read it \(NoSuchBucket"):
        ManifestSource("s3://no-such-bucket/manifest.json", s3=s3).serving_report(manifest)

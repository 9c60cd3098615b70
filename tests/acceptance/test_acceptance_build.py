"""Check 5 against a moto model store: the live manifest is the deployed build's, what it names exists, and
its serving report passed."""

from __future__ import annotations

from typing import Any

from acceptance_support import deployed, publish_store, record
from store_support import BUCKET

from triton_mme.acceptance.build import check_build
from triton_mme.acceptance.report import Check
from triton_mme.client.manifest_source import ManifestSource
from triton_mme.core.locations import live_manifest_key
from triton_mme.core.manifest import Manifest


def build_checks(s3: Any) -> dict[str, Check]:
    source = ManifestSource(f"s3://{BUCKET}/{live_manifest_key()}", s3)
    manifest = source.manifest()
    return {c.name: c for c in check_build(deployed(), manifest, source, source.serving_report(manifest), s3)}


def test_a_store_as_the_deployment_left_it_passes(s3: Any) -> None:
    publish_store(s3)
    checks = build_checks(s3)
    assert list(checks) == ["fingerprint", "files", "serving-report"]
    assert all(check.passed for check in checks.values()), [c.line() for c in checks.values()]
    assert (
        checks["files"].seen
        == f"all present: 1 archive(s) under s3://{BUCKET}/models/ and 1 companion file(s)"
    )


def test_a_live_manifest_that_is_not_the_builds_fails(s3: Any) -> None:
    other = Manifest(archives=(record().model_copy(update={"weights": "pretrained"}),))
    publish_store(s3, build_manifest=other)
    check = build_checks(s3)["fingerprint"]
    assert not check.passed
    assert check.seen.startswith("the live manifest is sha256 ")
    assert "manifest promotion" in (check.fix or "")


def test_a_missing_build_manifest_fails(s3: Any) -> None:
    publish_store(s3)
    from acceptance_support import FINGERPRINT

    from triton_mme.core.locations import build_manifest_key

    s3.delete_object(Bucket=BUCKET, Key=build_manifest_key(FINGERPRINT))
    check = build_checks(s3)["fingerprint"]
    assert not check.passed and check.seen.startswith("no build manifest (")


def test_a_missing_archive_fails_naming_its_key(s3: Any) -> None:
    publish_store(s3, with_archive=False)
    check = build_checks(s3)["files"]
    assert not check.passed
    assert check.seen == "1 missing or wrong: models/tiny-onnx-0123456789abcdef.tar.gz (absent)"


def test_no_serving_report_or_a_failed_one_fails(s3: Any) -> None:
    publish_store(s3, with_report=False)
    assert build_checks(s3)["serving-report"].seen == "no serving report"
    publish_store(s3, report_passed=False)
    failed = build_checks(s3)["serving-report"]
    assert not failed.passed and "bad config" in failed.seen

"""Check 5, the manifest is the build: the live manifest is the one the deployed build published,
everything it names is in the store, and the serving check passed it.

Keys follow core.locations: the build's manifest at `<manifest prefix>builds/<fingerprint>/manifest.json`
(written once, by the serving check stage), the live pointer a copy of its bytes, the serving report under
the manifest's digest, archives under the model prefix and companion files beside the manifest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triton_mme.acceptance.report import MANIFEST, Check, failed, passed
from triton_mme.acceptance.stack import DeployedSettings
from triton_mme.client.manifest_source import S3_SCHEME, ManifestSource
from triton_mme.core.errors import UserError, first_line
from triton_mme.core.locations import build_manifest_key, manifest_prefix_of
from triton_mme.core.manifest import Manifest
from triton_mme.core.serving_report import ServingReport

PROMOTION_FIX = (
    "the deployment's manifest promotion did not move the live manifest to this build, or another writer "
    "(`triton-mme upload/add/remove`) changed it since: `make deploy` again (docs/acceptance.md#manifest)"
)


def _split(url: str) -> tuple[str, str]:
    bucket, _, key = url.removeprefix(S3_SCHEME).partition("/")
    return bucket, key


def _missing(s3: Any, bucket: str, keys: Mapping[str, int | None]) -> list[str]:
    """The keys that are absent, or whose size is not the one the manifest records (None: any size)."""
    from botocore.exceptions import ClientError

    wrong = []
    for key, size in sorted(keys.items()):
        try:
            found = s3.head_object(Bucket=bucket, Key=key)["ContentLength"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
                raise
            wrong.append(f"{key} (absent)")
            continue
        if size is not None and found != size:
            wrong.append(f"{key} ({found} bytes, the manifest says {size})")
    return wrong


def check_build(
    settings: DeployedSettings,
    manifest: Manifest,
    source: ManifestSource,
    report: ServingReport | None,
    s3: Any,
) -> list[Check]:
    bucket, live_key = _split(settings.live_manifest_url)
    build_key = build_manifest_key(settings.build_fingerprint, manifest_prefix_of(live_key))
    expected = f"the live manifest is build {settings.build_fingerprint[:16]}'s, {build_key}"
    try:
        built: str | None = ManifestSource(f"{S3_SCHEME}{bucket}/{build_key}", s3).manifest().sha256
        problem = None
    except UserError as error:
        built, problem = None, first_line(error)
    if built == manifest.sha256:
        checks = [
            passed(MANIFEST, "fingerprint", expected=expected, seen=f"the same bytes (sha256 {built[:16]})")
        ]
    else:
        seen = (
            f"the live manifest is sha256 {manifest.sha256[:16]}, the build's {built[:16]}"
            if built
            else f"no build manifest ({problem})"
        )
        checks = [failed(MANIFEST, "fingerprint", expected=expected, seen=seen, fix=PROMOTION_FIX)]
    model_bucket, model_prefix = _split(settings.model_data_url)
    archives = {f"{model_prefix}{a.target_model}": a.size_bytes for a in manifest.archives}
    folder = live_key.rpartition("/")[0]
    files = {f"{folder}/{name}" if folder else name: None for name in manifest.files}
    absent = _missing(s3, model_bucket, archives) + _missing(s3, bucket, files)
    expected = (
        f"{len(archives)} archive(s) under {settings.model_data_url} and {len(files)} companion file(s)"
    )
    if absent:
        checks.append(
            failed(
                MANIFEST,
                "files",
                expected=expected,
                seen=f"{len(absent)} missing or wrong: {', '.join(absent[:5])}",
                fix="publish the build again (`make deploy`); never delete what the live manifest names "
                "(`triton-mme remove` refuses it)",
            )
        )
    else:
        checks.append(passed(MANIFEST, "files", expected=expected, seen=f"all present: {expected}"))
    checks.append(_report_check(manifest, report))
    return checks


def _report_check(manifest: Manifest, report: ServingReport | None) -> Check:
    expected = f"a passing serving report for manifest {manifest.sha256[:16]}"
    fix = (
        "the serving check stage publishes it before the build's manifest: rerun `make deploy` "
        "(docs/serving-check.md)"
    )
    if report is None:
        return failed(MANIFEST, "serving-report", expected=expected, seen="no serving report", fix=fix)
    if not report.passed:
        names = ", ".join(f"{a.target_model}: {a.error}" for a in report.failures[:3])
        return failed(MANIFEST, "serving-report", expected=expected, seen=f"it failed ({names})", fix=fix)
    return passed(
        MANIFEST,
        "serving-report",
        expected=expected,
        seen=f"passed on {report.server} ({len(report.archives)} archive(s), {len(report.skipped)} skipped)",
    )

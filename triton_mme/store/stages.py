"""The store's part in the deployment's two stages: a build's manifest is published only once its serving
check passed.

1. The build stage uploads the archives and companion files (`upload --archives-only`), then stages its
   manifest as a candidate, `<manifest prefix>builds/<fingerprint>/candidate-<manifest sha256>.json`, where
   nothing reads it as a manifest, and last records its digest for this run of the build engine and this
   shard, `builds/<fingerprint>/runs/<run>/shard-<index>.json` (`stage_candidate`; one build is shard 0).
2. The serving check stage finds that record (`staged_candidate`), fetches the candidate and every file it
   names, checking each digest (`fetch_candidate`), checks the archives in the serving image, publishes its
   passing report as `<manifest prefix><manifest sha256>.serving-report.json` (`publish_serving_report`), and
   last publishes the build's manifest under its fingerprint (`publish_checked_build`), which refuses without
   that report.

With the stages fanned out over several runners (`buildRunners`), each build shard stages its own candidate,
each check shard checks that shard's, and a last step publishes the build's manifest as the union of the
shards' candidates, each beside its passing report (`publish_checked_shards`).

A shard's record is never stale when the check reads it: its key names the run, so no other run wrote it;
the build stage succeeded, so every shard wrote it (a shard records last, and a batch fails fast with any
failed shard); and S3 reads are strongly consistent after a write. Every key is written once
(If-None-Match); a rerun of the same candidate keeps what is there.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from triton_mme.core.bounded import load_json
from triton_mme.core.files import file_sha256, write_atomically
from triton_mme.core.locations import candidate_manifest_key, serving_report_key, staged_shard_key
from triton_mme.core.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest
from triton_mme.core.naming import COMPANION_NAME
from triton_mme.core.runner_environment import FINGERPRINT_ENV, RUN_ENV
from triton_mme.core.serving_report import ServingReport, ServingReportError
from triton_mme.core.wording import plural
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import (
    BuildManifestReport,
    DifferentContentError,
    PublishError,
    build_manifest_key_of,
    check_named_objects,
    create_json,
    head,
    publish_build_manifest,
    read_local_manifest,
)

# A shard's record is {"candidate": "<64 hex digits>"}: 78 bytes.
STAGED_RECORD_LIMIT_BYTES = 4096


@dataclass(frozen=True)
class Written:
    key: str
    written: bool  # False: the same bytes (or, for a report, an earlier passing one) were already there


def _candidate_key(fingerprint: str, manifest_sha256: str, manifest_prefix: str) -> str:
    try:
        return candidate_manifest_key(fingerprint, manifest_sha256, manifest_prefix)
    except ValueError as error:
        raise PublishError(f"{error} (the build engine passes the fingerprint to the stages)") from None


def _staged_shard_key(store: ModelStoreClient, fingerprint: str, run: str, shard: int) -> str:
    try:
        return staged_shard_key(fingerprint, run, shard, store.prefixes.manifests)
    except ValueError as error:
        raise PublishError(f"{error} (the build engine sets {FINGERPRINT_ENV} and {RUN_ENV})") from None


def stage_candidate(
    store: ModelStoreClient, directory: Path, fingerprint: str, run: str, shard: int = 0
) -> tuple[Written, str]:
    """Stage the build's manifest for the serving check, then record it as what `shard` staged in `run`;
    returns where, and the manifest's sha256.

    Everything it names must already be in the bucket (`upload --archives-only` first).
    """
    manifest = read_local_manifest(directory)
    key = _candidate_key(fingerprint, manifest.sha256, store.prefixes.manifests)
    record = _staged_shard_key(store, fingerprint, run, shard)
    check_named_objects(store, manifest)
    written = create_json(store, key, manifest.to_json().encode("utf-8"))
    create_json(store, record, json.dumps({"candidate": manifest.sha256}).encode("utf-8"))
    return Written(key, written), manifest.sha256


def staged_candidate(store: ModelStoreClient, fingerprint: str, run: str, shard: int = 0) -> str:
    """The digest of the candidate `shard` staged in `run` (see the module's note on why it is this run's)."""
    key = _staged_shard_key(store, fingerprint, run, shard)
    if head(store, key) is None:
        raise PublishError(
            f"{store.url(key)}: build shard {shard} staged no candidate in run {run} (the build stage "
            "stages one per shard, last)"
        )
    body = store.s3.get_object(Bucket=store.bucket, Key=key)["Body"].read(STAGED_RECORD_LIMIT_BYTES + 1)
    try:
        record = load_json(body, where=store.url(key), max_bytes=STAGED_RECORD_LIMIT_BYTES)
    except ValueError as error:  # too large, too deep or not JSON: its line says which
        raise PublishError(str(error)) from None
    if not isinstance(record, dict) or not isinstance(record.get("candidate"), str):
        raise PublishError(
            f'{store.url(key)}: not a staged shard\'s record; expected {{"candidate": "<manifest sha256>"}}'
        )
    return record["candidate"]


def _download(store: ModelStoreClient, key: str, path: Path) -> str:
    """Download to a scratch name beside `path`, then move it in place; returns its sha256."""
    partial = path.with_name(f".partial-{path.name}")
    try:
        store.s3.download_file(store.bucket, key, str(partial))
        digest = file_sha256(partial)
        os.replace(partial, path)
        return digest
    finally:
        partial.unlink(missing_ok=True)


def _candidate(store: ModelStoreClient, fingerprint: str, manifest_sha256: str) -> tuple[bytes, Manifest]:
    """A staged candidate's bytes and manifest, its content checked against its name."""
    key = _candidate_key(fingerprint, manifest_sha256, store.prefixes.manifests)
    if head(store, key) is None:
        raise PublishError(f"{store.url(key)}: no such candidate (the build stage stages it)")
    body = store.s3.get_object(Bucket=store.bucket, Key=key)["Body"].read()
    if hashlib.sha256(body).hexdigest() != manifest_sha256:
        raise PublishError(f"{store.url(key)}: its content is not the manifest its name states")
    try:
        return body, Manifest.from_json(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise PublishError(f"{store.url(key)}: not a valid manifest ({error})") from None


def fetch_candidate(
    store: ModelStoreClient, fingerprint: str, manifest_sha256: str, directory: Path
) -> Manifest:
    """Download a staged candidate and every archive and file it names into `directory`, each checked
    against its digest; `directory/manifest.json` is written last."""
    body, manifest = _candidate(store, fingerprint, manifest_sha256)
    directory.mkdir(parents=True, exist_ok=True)
    for record in manifest.archives:
        archive_key = store.prefixes.models + record.target_model
        digest = _download(store, archive_key, directory / record.target_model)
        if digest != record.sha256:
            raise PublishError(f"{store.url(archive_key)}: sha256 {digest} is not the manifest's")
    for name in sorted(manifest.files):
        named = COMPANION_NAME.match(name)
        companion_key = store.prefixes.manifests + name
        digest = _download(store, companion_key, directory / name)
        if named is None or not digest.startswith(named["digest"]):
            raise PublishError(f"{store.url(companion_key)}: its content does not match its name")
    write_atomically(directory / MANIFEST_FILE_NAME, body)
    return manifest


def require_passing(report: ServingReport, manifest: Manifest, *, where: str) -> None:
    """The report checked exactly this manifest, every archive of it, and every one passed."""
    if report.manifest_sha256 != manifest.sha256:
        raise PublishError(
            f"{where} checked manifest {report.manifest_sha256}, not this build's {manifest.sha256}; "
            "run serving-check again"
        )
    if report.failures:
        first = report.failures[0]
        raise PublishError(f"{where}: {first.target_model} did not pass the serving check: {first.error}")
    checked = {archive.target_model for archive in report.archives if archive.passed}
    unchecked = sorted(manifest.target_models - checked)
    if unchecked:
        raise PublishError(
            f"{where}: {plural(len(unchecked), 'archive')} not checked in a serving image (first: "
            f"{unchecked[0]}); only a report that checked every archive publishes a build"
        )


def publish_serving_report(store: ModelStoreClient, directory: Path, report_path: Path) -> Written:
    """Publish a passing report of the build's manifest, once; an earlier passing report of the same
    manifest (a rerun of the same candidate) is kept."""
    manifest = read_local_manifest(directory)
    try:
        report = ServingReport.from_json(report_path.read_bytes(), where=str(report_path))
    except OSError as error:
        raise PublishError(f"{report_path}: cannot read the serving report ({error.strerror})") from None
    require_passing(report, manifest, where=str(report_path))
    key = serving_report_key(manifest.sha256, store.prefixes.manifests)
    try:
        return Written(key, create_json(store, key, report.to_json().encode("utf-8")))
    except DifferentContentError:
        earlier = _published_report(store, key)
        require_passing(earlier, manifest, where=store.url(key))
        return Written(key, False)


def _published_report(store: ModelStoreClient, key: str) -> ServingReport:
    if head(store, key) is None:
        raise PublishError(
            f"{store.url(key)}: no serving report of this manifest; the serving check publishes it first "
            "(publish-report)"
        )
    body = store.s3.get_object(Bucket=store.bucket, Key=key)["Body"].read()
    try:
        return ServingReport.from_json(body, where=store.url(key))
    except ServingReportError as error:
        raise PublishError(str(error)) from None


def publish_checked_build(
    store: ModelStoreClient, manifest: Manifest, fingerprint: str
) -> BuildManifestReport:
    """The build's manifest under its fingerprint, only beside a published, passing serving report of it."""
    build_manifest_key_of(store, fingerprint)
    key = serving_report_key(manifest.sha256, store.prefixes.manifests)
    require_passing(_published_report(store, key), manifest, where=store.url(key))
    return publish_build_manifest(store, manifest, fingerprint)


def publish_checked_shards(
    store: ModelStoreClient, fingerprint: str, run: str, shards: int
) -> BuildManifestReport:
    """The build's manifest under its fingerprint: the union of the candidates the `shards` build shards
    staged in `run`, each of which must have its own published, passing serving report, and no model in two
    of them."""
    if shards < 1:
        raise PublishError(f"--shards {shards}: allowed: the number of build shards, 1 or more")
    archives: list[ArchiveRecord] = []
    for shard in range(shards):
        _, manifest = _candidate(store, fingerprint, staged_candidate(store, fingerprint, run, shard))
        key = serving_report_key(manifest.sha256, store.prefixes.manifests)
        require_passing(_published_report(store, key), manifest, where=store.url(key))
        archives.extend(manifest.archives)
    try:
        merged = Manifest(archives=tuple(sorted(archives, key=lambda r: (r.name, r.format))))
    except ValueError as error:
        raise PublishError(f"the shards' candidates overlap: {error}") from None
    return publish_build_manifest(store, merged, fingerprint)

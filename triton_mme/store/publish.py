"""Publish built archives and their manifest to S3 without ever exposing a half-published state.

The endpoint loads archives by key (TargetModel) and caches them by that key, so a key, once
written, must never change its bytes. Every key is checked before anything is uploaded, and the
manifest, which tells readers which keys to use, is written only after all its archives exist.

Every write is conditional, so two writers cannot silently overwrite each other (S3 conditional writes; the
model store's bucket policy refuses any other write, triton_mme_cdk/constructs/model_store.py):

- archives, companion files and immutable manifest copies are created with `If-None-Match: *`: written
  only if the key is absent. A writer that loses the race re-reads the key and accepts it only when it holds
  the same bytes;
- a manifest's per-model index and records (core.manifest_index) are created the same way, after everything
  the manifest names is checked and before the manifest itself: an index never leads to a missing object;
- the live pointer `manifests/manifest.json` is replaced with `If-Match: <the ETag it read>` (or
  `If-None-Match: *` when there is none yet). A writer that loses re-reads the pointer, re-applies its change
  and tries again, a bounded number of times, so no change is lost.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError
from pydantic import ValidationError

from triton_mme.archive_inspection import inspect_archive
from triton_mme.core.errors import UserError, aws_error_code, first_line
from triton_mme.core.files import file_sha256, private_copy, private_directory
from triton_mme.core.locations import build_manifest_key, live_manifest_key, manifest_index_keys
from triton_mme.core.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest
from triton_mme.core.manifest_index import index_files
from triton_mme.core.naming import COMPANION_NAME
from triton_mme.core.runner_environment import FINGERPRINT_ENV
from triton_mme.store.errors import DifferentContentError, PublishError
from triton_mme.store.intents import ADD, REMOVE, Step, intents, no_step
from triton_mme.store.location import ModelStoreClient

ARCHIVE_CONTENT_TYPE = "application/gzip"
JSON_CONTENT_TYPE = "application/json"
# Golden data (.npz): a zip of NumPy arrays, no registered media type of its own.
BINARY_CONTENT_TYPE = "application/octet-stream"
# Object metadata holding the sha256 of the whole object: S3's own SHA256 checksum of a multipart
# upload is a checksum of part checksums, so it cannot be compared with a file's digest.
SHA256_METADATA_KEY = "sha256"
_HASH_CHUNK = 8 * 1024 * 1024

# How S3 answers a conditional write that did not happen (S3 API reference, PutObject and
# CompleteMultipartUpload, IfMatch / IfNoneMatch): 412 when the condition does not hold, 409 when another
# conditional write to the same key was in flight ("On a 409 failure you should retry").
PRECONDITION_FAILED = "PreconditionFailed"
CONDITIONAL_CONFLICT = "ConditionalRequestConflict"
# A pointer written with If-Match whose key was deleted since it was read.
_GONE = ("404", "NoSuchKey", "NotFound")
# Bounded retries: a writer that keeps losing stops with one line instead of looping.
POINTER_ATTEMPTS = 5
CREATE_ATTEMPTS = 3

# Called with (key, size) before an upload; returns the transfer manager's bytes-sent callback.
ProgressFactory = Callable[[str, int], Callable[[int], None]]


@dataclass(frozen=True)
class LocalObject:
    """A file to publish under `key`, with the digest and size it must have."""

    path: Path
    key: str
    sha256: str
    size: int


@dataclass(frozen=True)
class PublishReport:
    uploaded: tuple[str, ...]
    skipped: tuple[str, ...]
    manifest_keys: tuple[str, ...]


def companion_content_type(name: str) -> str:
    return JSON_CONTENT_TYPE if name.endswith(".json") else BINARY_CONTENT_TYPE


def read_local_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST_FILE_NAME
    try:
        return Manifest.read(path)
    except OSError as error:
        raise PublishError(f"{path}: cannot read the build manifest ({error.strerror})") from None
    except (ValueError, ValidationError) as error:
        raise PublishError(f"{path}: not a valid build manifest ({first_line(error)})") from None


def _copied(path: Path, private: Path | None, what: str) -> Path:
    if not path.is_file():
        raise PublishError(f"{path}: {what} named in the manifest is missing")
    return private_copy(path, private) if private is not None else path


def check_archive_contents(path: Path, record: ArchiveRecord) -> None:
    """The model check of `add`, `serve-local` and `serving-check` (archive_inspection: layout, config
    policy, the model file inspected) on a build's archive, and a name, model directory and format that match
    the record (which a build-cache hit passes too)."""
    try:
        inspect_archive(path, record=record)
    except UserError as error:
        raise PublishError(str(error)) from None


def check_local_archives(
    directory: Path, manifest: Manifest, private: Path | None = None, *, check_contents: bool = True
) -> list[LocalObject]:
    """Every archive the manifest names must be present with the recorded size and sha256, and within the
    archive policy. With `private`, each is first copied there once and everything after (hash, checks,
    upload) reads the copy: a file replaced after the check is never published under the checked hash."""
    objects = []
    for record in manifest.archives:
        given = directory / record.target_model
        path = _copied(given, private, "archive")
        size = path.stat().st_size
        if size != record.size_bytes:
            raise PublishError(
                f"{given}: size {size} bytes does not match the manifest ({record.size_bytes})"
            )
        digest = file_sha256(path)
        if digest != record.sha256:
            raise PublishError(f"{given}: sha256 {digest} does not match the manifest ({record.sha256})")
        if check_contents:
            check_archive_contents(path, record)
        objects.append(LocalObject(path=path, key=record.target_model, sha256=digest, size=size))
    return objects


def check_local_companions(
    directory: Path, manifest: Manifest, private: Path | None = None
) -> list[LocalObject]:
    """Every companion file (labels, tokenizer) the manifest names, with the content its name states
    (read from a private copy, like the archives)."""
    objects = []
    for name in sorted(manifest.files):
        given = directory / name
        path = _copied(given, private, "file")
        digest = file_sha256(path)
        named = COMPANION_NAME.match(name)
        if named is None or not digest.startswith(named["digest"]):
            raise PublishError(f"{given}: its content (sha256 {digest[:16]}...) does not match its name")
        objects.append(LocalObject(path=path, key=name, sha256=digest, size=path.stat().st_size))
    return objects


def error_code(error: BaseException) -> str | None:
    """S3's error code for a failed call, also when boto3's transfer manager wrapped the ClientError (it
    raises S3UploadFailedError while handling it)."""
    for candidate in (error, error.__cause__, error.__context__):
        code = aws_error_code(candidate) if candidate is not None else None
        if code is not None:
            return code
    return None


def is_missing(error: ClientError) -> bool:
    """S3 answered that the key (or the object) is not there."""
    return aws_error_code(error) in _GONE


def head(store: ModelStoreClient, key: str) -> dict[str, Any] | None:
    """The object's metadata, or None when there is no such key."""
    try:
        return dict(store.s3.head_object(Bucket=store.bucket, Key=key))
    except ClientError as error:
        if is_missing(error):
            return None
        raise


def _remote_sha256(store: ModelStoreClient, key: str, metadata: dict[str, Any]) -> str:
    recorded = metadata.get("Metadata", {}).get(SHA256_METADATA_KEY)
    if recorded:
        return str(recorded)
    # Written by another tool: only the bytes themselves can prove the content is the same.
    digest = hashlib.sha256()
    for chunk in store.s3.get_object(Bucket=store.bucket, Key=key)["Body"].iter_chunks(_HASH_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


# Past this many keys, one listing of the prefix (1,000 keys a call) replaces a HEAD per key.
BULK_CHECK_THRESHOLD = 20


def existing_keys(store: ModelStoreClient, keys: Iterable[str]) -> set[str]:
    """Which of `keys` are in the bucket: a HEAD each for a few, ListObjectsV2 by their common prefix for
    many (10,000 keys: 10 listing calls instead of 10,000 HEADs)."""
    wanted = set(keys)
    if len(wanted) <= BULK_CHECK_THRESHOLD:
        return {key for key in wanted if head(store, key) is not None}
    first, last = min(wanted), max(wanted)
    shared = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first))
    prefix = first[:shared]  # S3 prefixes are strings, not paths
    found: set[str] = set()
    for page in store.s3.get_paginator("list_objects_v2").paginate(Bucket=store.bucket, Prefix=prefix):
        found.update(item["Key"] for item in page.get("Contents", []) if item["Key"] in wanted)
    return found


def is_already_published(
    store: ModelStoreClient, key: str, sha256: str, size: int, *, present: bool | None = None
) -> bool:
    """True when `key` holds exactly these bytes, False when absent; refuses different bytes. `present`
    False (from a listing) skips the HEAD of a key known to be absent."""
    metadata = head(store, key) if present is not False else None
    if metadata is None:
        return False
    if metadata.get("ContentLength") != size or _remote_sha256(store, key, metadata) != sha256:
        raise DifferentContentError(
            f"{store.url(key)} already exists with different content; refusing to overwrite it "
            "(a changed model needs a new key: rebuild it so its content hash changes the name)"
        )
    return True


@contextmanager
def only_if_absent(store: ModelStoreClient, key: str) -> Iterator[None]:
    """While the block runs, every PutObject or CompleteMultipartUpload of `key` carries `If-None-Match: *`.

    boto3's transfer manager (s3transfer 0.19.3, the newest release) does not accept IfNoneMatch among its
    upload arguments (`TransferManager.ALLOWED_UPLOAD_ARGS`), so the parameter is added through botocore's
    event system, on this client, for this one bucket and key: the single PutObject of a small file, or the
    CompleteMultipartUpload that creates a large one (CreateMultipartUpload and UploadPart take no condition;
    S3 user guide, "Conditional writes").
    """

    bucket = store.bucket

    def add_condition(params: dict[str, Any], **_: Any) -> None:
        if params.get("Bucket") == bucket and params.get("Key") == key:
            params["IfNoneMatch"] = "*"

    events = store.s3.meta.events
    handlers = [
        (f"before-parameter-build.s3.{operation}", f"triton-mme:if-none-match:{operation}:{bucket}/{key}")
        for operation in ("PutObject", "CompleteMultipartUpload")
    ]
    for event, unique_id in handlers:
        events.register(event, add_condition, unique_id=unique_id)
    try:
        yield
    finally:
        for event, unique_id in handlers:
            events.unregister(event, unique_id=unique_id)


# s3transfer picks its CRT client for upload_file when `awscrt` is installed on an instance it counts as
# optimized ("auto", the default; boto3 `s3/transfer.py` `_should_use_crt`). CRT requests do not pass through
# botocore's event hooks, so `only_if_absent` would add no If-None-Match and every write would hit the
# bucket's Deny: every upload runs on the classic client.
CLASSIC_TRANSFER_CLIENT = "classic"


def classic_transfer_config(config: TransferConfig | None = None) -> TransferConfig:
    """`config` (or the defaults) with the classic transfer client, whatever it asked for."""
    pinned = copy.copy(config) if config is not None else TransferConfig()
    pinned.preferred_transfer_client = CLASSIC_TRANSFER_CLIENT
    return pinned


def _lost_race_error(url: str, attempts: int) -> PublishError:
    return PublishError(f"{url}: another writer kept writing the same key ({attempts} attempts); try again")


def publish_objects(
    store: ModelStoreClient,
    prefix: str,
    objects: Iterable[LocalObject],
    *,
    content_type: str = ARCHIVE_CONTENT_TYPE,
    transfer_config: TransferConfig | None = None,
    progress: ProgressFactory | None = None,
) -> tuple[list[str], list[str]]:
    """Upload the objects that are not there yet; returns (uploaded keys, skipped keys).

    Every key is checked before the first upload, so a conflict leaves the bucket untouched. Each upload
    creates its key only if it is still absent: when another writer created it in between, its bytes are
    compared and the object counts as skipped if they are the same.
    """
    pending, skipped = [], []
    items = list(objects)
    present = existing_keys(store, [prefix + item.key for item in items])
    for item in items:
        key = prefix + item.key
        if is_already_published(store, key, item.sha256, item.size, present=key in present):
            skipped.append(key)
        else:
            pending.append((key, item))
    uploaded = []
    for key, item in pending:
        if _create_file(store, key, item, content_type, transfer_config, progress):
            uploaded.append(key)
        else:
            skipped.append(key)
    return uploaded, skipped


def _create_file(
    store: ModelStoreClient,
    key: str,
    item: LocalObject,
    content_type: str,
    transfer_config: TransferConfig | None,
    progress: ProgressFactory | None,
) -> bool:
    """Upload `item` to `key` if absent: True when written, False when the same bytes got there first."""
    for _ in range(CREATE_ATTEMPTS):
        try:
            with only_if_absent(store, key):
                store.s3.upload_file(
                    str(item.path),
                    store.bucket,
                    key,
                    ExtraArgs={
                        "ContentType": content_type,
                        "Metadata": {SHA256_METADATA_KEY: item.sha256},
                        # Lets S3 verify every part in transit.
                        "ChecksumAlgorithm": "SHA256",
                    },
                    Config=classic_transfer_config(transfer_config),
                    Callback=progress(key, item.size) if progress else None,
                )
            return True
        except Exception as error:
            code = error_code(error)
            if code == PRECONDITION_FAILED:
                # Another writer created the key since it was checked: the same bytes are fine, other bytes
                # stop here; a key that is gone again is tried once more.
                if is_already_published(store, key, item.sha256, item.size):
                    return False
            elif code != CONDITIONAL_CONFLICT:
                raise
            # 409: a concurrent conditional write was in flight; S3 asks for the whole upload again.
    raise _lost_race_error(store.url(key), CREATE_ATTEMPTS)


def put_json(store: ModelStoreClient, key: str, body: bytes, digest: str, **condition: str) -> Any:
    """Write a small JSON object with its sha256 recorded (manifests, figures), under `condition`
    (IfNoneMatch or IfMatch); returns S3's answer."""
    return store.s3.put_object(
        Bucket=store.bucket,
        Key=key,
        Body=body,
        ContentType=JSON_CONTENT_TYPE,
        Metadata={SHA256_METADATA_KEY: digest},
        ChecksumAlgorithm="SHA256",
        **condition,
    )


def create_json(store: ModelStoreClient, key: str, body: bytes) -> bool:
    """Write a JSON object that never changes (an immutable manifest copy, figures) if `key` is absent.

    True when written, False when the key already holds these bytes; DifferentContentError when it holds
    others.
    """
    digest = hashlib.sha256(body).hexdigest()
    for _ in range(CREATE_ATTEMPTS):
        if is_already_published(store, key, digest, len(body)):
            return False
        try:
            put_json(store, key, body, digest, IfNoneMatch="*")
            return True
        except ClientError as error:
            if error_code(error) not in (PRECONDITION_FAILED, CONDITIONAL_CONFLICT):
                raise
    raise _lost_race_error(store.url(key), CREATE_ATTEMPTS)


def _parse_manifest(url: str, body: bytes) -> Manifest:
    try:
        return Manifest.from_json(body.decode("utf-8"))
    except (ValueError, ValidationError) as error:
        raise PublishError(f"{url}: not a valid manifest ({first_line(error)})") from None


@dataclass(frozen=True)
class LiveManifest:
    """The live pointer as read: its manifest and ETag, or neither when nothing is published yet."""

    manifest: Manifest | None
    etag: str | None
    body: bytes | None = None


def read_live_manifest(store: ModelStoreClient) -> LiveManifest:
    key = live_manifest_key(store.prefixes.manifests)
    try:
        response = store.s3.get_object(Bucket=store.bucket, Key=key)
    except ClientError as error:
        if is_missing(error):
            return LiveManifest(None, None)
        raise
    body = response["Body"].read()
    return LiveManifest(_parse_manifest(store.url(key), body), str(response["ETag"]), body)


def read_published_manifest(store: ModelStoreClient) -> Manifest | None:
    """The current manifest, or None when nothing has been published yet."""
    return read_live_manifest(store).manifest


def check_named_objects(store: ModelStoreClient, manifest: Manifest) -> None:
    """Every archive and companion file the manifest names must be in the bucket."""
    named = [store.prefixes.models + t for t in sorted(manifest.target_models)]
    companions = [store.prefixes.manifests + f for f in sorted(manifest.files)]
    present = existing_keys(store, named) | existing_keys(store, companions)
    for key in [*named, *companions]:
        if key not in present:
            raise PublishError(
                f"{store.url(key)}: named in the manifest but not in the bucket; "
                "refusing to publish the manifest"
            )


def publish_index(store: ModelStoreClient, manifest: Manifest) -> tuple[str, str]:
    """Create the manifest's records, then its index (each once, If-None-Match), for clients that read one
    model's record (client.manifest_source). Call it after check_named_objects and before writing the
    manifest: the index is found from the manifest's digest, so it must exist before the manifest does."""
    index_key, records_key = manifest_index_keys(manifest.sha256, store.prefixes.manifests)
    files = index_files(manifest)
    create_json(store, records_key, files.records)
    create_json(store, index_key, files.index)
    return index_key, records_key


def update_live_manifest(
    store: ModelStoreClient, change: Callable[[Manifest | None], Manifest]
) -> tuple[str, ...]:
    """Apply `change` to the live manifest and write the result, without losing a concurrent change.

    Reads the pointer and its ETag, computes the new manifest, checks that everything it names is in the
    bucket, writes its immutable `<sha256>.json` copy once, then replaces the pointer only if it still has
    that ETag. When another writer got in between (412, or 409 while its write was in flight), the pointer is
    read again and `change` applied to the newer manifest, at most POINTER_ATTEMPTS times. Returns the
    immutable copy's key and the pointer's key.
    """
    pointer = live_manifest_key(store.prefixes.manifests)
    for _ in range(POINTER_ATTEMPTS):
        live = read_live_manifest(store)
        manifest = change(live.manifest)
        check_named_objects(store, manifest)
        publish_index(store, manifest)
        body = manifest.to_json().encode("utf-8")
        versioned_key = f"{store.prefixes.manifests}{manifest.sha256}.json"
        create_json(store, versioned_key, body)
        if body == live.body:
            return versioned_key, pointer
        condition = {"IfMatch": live.etag} if live.etag else {"IfNoneMatch": "*"}
        try:
            put_json(store, pointer, body, manifest.sha256, **condition)
            return versioned_key, pointer
        except ClientError as error:
            if error_code(error) not in (PRECONDITION_FAILED, CONDITIONAL_CONFLICT, *_GONE):
                raise
    raise _lost_race_error(store.url(pointer), POINTER_ATTEMPTS)


def publish_manifest(store: ModelStoreClient, manifest: Manifest) -> tuple[str, ...]:
    """Make `manifest` the live one: an immutable `<sha256>.json` copy, then `manifest.json`.

    Refuses when an archive or file the manifest names is not in the bucket, so readers never follow
    a manifest to a missing object.
    """
    return update_live_manifest(store, lambda _: manifest)


@dataclass(frozen=True)
class BuildManifestReport:
    key: str
    written: bool  # False: the same manifest, or an earlier build's of this fingerprint, was already there


def build_manifest_key_of(store: ModelStoreClient, fingerprint: str) -> str:
    """Where a build's manifest goes; refuses a fingerprint that is not one."""
    try:
        return build_manifest_key(fingerprint, store.prefixes.manifests)
    except ValueError as error:
        raise PublishError(f"--fingerprint: {error} (the build trigger sets {FINGERPRINT_ENV})") from None


def publish_build_manifest(
    store: ModelStoreClient, manifest: Manifest, fingerprint: str
) -> BuildManifestReport:
    """Write a build's manifest under its fingerprint, once; never the live pointer.

    Everything it names must already be in the bucket. If a manifest for this fingerprint exists (an
    earlier build of the same inputs published first), that one is kept as long as everything it names is
    still there: the key is written once and never changes.
    """
    key = build_manifest_key_of(store, fingerprint)
    check_named_objects(store, manifest)
    publish_index(store, manifest)
    body = manifest.to_json().encode("utf-8")
    try:
        return BuildManifestReport(key, create_json(store, key, body))
    except DifferentContentError:
        earlier = _parse_manifest(
            store.url(key), store.s3.get_object(Bucket=store.bucket, Key=key)["Body"].read()
        )
        check_named_objects(store, earlier)
        publish_index(store, earlier)
        return BuildManifestReport(key, False)


def upload_build(
    store: ModelStoreClient,
    directory: Path,
    *,
    transfer_config: TransferConfig | None = None,
    progress: ProgressFactory | None = None,
    make_live: bool = True,
    step: Step | None = None,
) -> PublishReport:
    """Publish a build directory: check locally, check every key, upload, then (with `make_live`) make its
    manifest the live one. The build runner passes `make_live=False` and publishes its manifest under the
    build's fingerprint instead (`publish_build_manifest`).

    With `make_live`, an add intent per archive is announced before the keys are checked and withdrawn
    after the manifest is written (store.intents): a remove of one of them running meanwhile is refused,
    or refuses the upload. Without it nothing becomes live, and the build role may not write intents: the
    candidate, the build manifest and the promotion each check that everything named is in the bucket."""
    manifest = read_local_manifest(directory)
    with private_directory("upload-") as private:
        return _upload_checked(
            store, directory, private, manifest, transfer_config, progress, make_live, step or no_step
        )


def _upload_checked(
    store: ModelStoreClient,
    directory: Path,
    private: Path,
    manifest: Manifest,
    transfer_config: TransferConfig | None,
    progress: ProgressFactory | None,
    make_live: bool,
    step: Step,
) -> PublishReport:
    objects = check_local_archives(directory, manifest, private)
    companions = check_local_companions(directory, manifest, private)
    step("verified")
    if not make_live:
        uploaded, skipped = _publish_build_objects(store, objects, companions, transfer_config, progress)
        step("uploaded")
        return PublishReport(uploaded=tuple(uploaded), skipped=tuple(skipped), manifest_keys=())
    with intents(store, sorted(manifest.target_models), ADD, refuses=REMOVE) as check_no_remove:
        step("announced")
        # Every key is checked after the announcement: an archive a finished remove deleted is uploaded again.
        uploaded, skipped = _publish_build_objects(store, objects, companions, transfer_config, progress)
        step("uploaded")
        # Once more before the manifest moves (one listing): a remove announced meanwhile already saw these
        # intents and stopped, so this refuses only one that does not look for them.
        check_no_remove()
        step("checked")
        manifest_keys = publish_manifest(store, manifest)
        step("written")
    return PublishReport(uploaded=tuple(uploaded), skipped=tuple(skipped), manifest_keys=manifest_keys)


def _publish_build_objects(
    store: ModelStoreClient,
    objects: list[LocalObject],
    companions: list[LocalObject],
    transfer_config: TransferConfig | None,
    progress: ProgressFactory | None,
) -> tuple[list[str], list[str]]:
    uploaded, skipped = publish_objects(
        store, store.prefixes.models, objects, transfer_config=transfer_config, progress=progress
    )
    for content_type in sorted({companion_content_type(item.key) for item in companions}):
        more_uploaded, more_skipped = publish_objects(
            store,
            store.prefixes.manifests,
            [item for item in companions if companion_content_type(item.key) == content_type],
            content_type=content_type,
        )
        uploaded += more_uploaded
        skipped += more_skipped
    return uploaded, skipped

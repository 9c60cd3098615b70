"""Publish built archives and their manifest to S3 without ever exposing a half-published state.

The endpoint loads archives by key (TargetModel) and caches them by that key, so a key, once
written, must never change its bytes. Every key is checked before anything is uploaded, and the
manifest, which tells readers which keys to use, is written only after all its archives exist.

Every write is conditional, so two writers cannot silently overwrite each other (S3 conditional writes; the
model store's bucket policy refuses any other write, triton_mme_cdk/constructs/model_store.py):

- archives, companion files and immutable manifest copies are created with `If-None-Match: *`: written
  only if the key is absent. A writer that loses the race re-reads the key and accepts it only when it holds
  the same bytes;
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

from triton_mme.core.archive import read_archive
from triton_mme.core.archive_policy import check_identity
from triton_mme.core.errors import UserError, aws_error_code, first_line
from triton_mme.core.files import file_sha256, private_copy, private_directory
from triton_mme.core.locations import MANIFEST_PREFIX, MODEL_PREFIX, build_manifest_key, live_manifest_key
from triton_mme.core.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest
from triton_mme.core.naming import COMPANION_NAME, model_directory

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

S3Client = Any  # boto3 clients are generated at run time and carry no static type
# Called with (key, size) before an upload; returns the transfer manager's bytes-sent callback.
ProgressFactory = Callable[[str, int], Callable[[int], None]]


class PublishError(UserError):
    """Publishing cannot go ahead; the message is one line naming the object and the problem."""


class DifferentContentError(PublishError):
    """A key that is written once already holds other bytes; it is never overwritten."""


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


def normalise_prefix(prefix: str) -> str:
    """`models`, `/models/` and `models/` all mean the key prefix `models/`."""
    stripped = prefix.strip("/")
    return f"{stripped}/" if stripped else ""


def check_prefixes(model_prefix: str, manifest_prefix: str) -> None:
    if not model_prefix:
        raise PublishError("--prefix: must name a folder such as 'models/' (the endpoint's ModelDataUrl)")
    if not manifest_prefix:
        raise PublishError("--manifest-prefix: must name a folder such as 'manifests/'")
    if manifest_prefix.startswith(model_prefix) or model_prefix.startswith(manifest_prefix):
        raise PublishError(
            f"--manifest-prefix '{manifest_prefix}' overlaps --prefix '{model_prefix}'; the manifest "
            "must live outside the model prefix, which the endpoint reads as TargetModel keys"
        )


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
    """The archive policy (core.archive_policy) on a build's archive, as `add` applies it: layout and
    config as the build writes them, and a name, model directory and format that match the record."""
    try:
        contents = read_archive(path)
        check_identity(
            str(path.name), path.name, fmt=contents.format, model_dir=contents.model_dir, sha256=record.sha256
        )
    except UserError as error:
        raise PublishError(str(error)) from None
    if contents.format.value != record.format or contents.model_dir != model_directory(
        record.name, contents.format
    ):
        raise PublishError(
            f"{path.name}: the manifest records model {record.name!r} in format {record.format} but the "
            f"archive holds {contents.model_dir!r} ({contents.format.value})"
        )


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


def _is_missing(error: ClientError) -> bool:
    return aws_error_code(error) in _GONE


def head(s3: S3Client, bucket: str, key: str) -> dict[str, Any] | None:
    """The object's metadata, or None when there is no such key."""
    try:
        return dict(s3.head_object(Bucket=bucket, Key=key))
    except ClientError as error:
        if _is_missing(error):
            return None
        raise


def _remote_sha256(s3: S3Client, bucket: str, key: str, metadata: dict[str, Any]) -> str:
    recorded = metadata.get("Metadata", {}).get(SHA256_METADATA_KEY)
    if recorded:
        return str(recorded)
    # Written by another tool: only the bytes themselves can prove the content is the same.
    digest = hashlib.sha256()
    for chunk in s3.get_object(Bucket=bucket, Key=key)["Body"].iter_chunks(_HASH_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


# Past this many keys, one listing of the prefix (1,000 keys a call) replaces a HEAD per key.
BULK_CHECK_THRESHOLD = 20


def existing_keys(s3: S3Client, bucket: str, keys: Iterable[str]) -> set[str]:
    """Which of `keys` are in the bucket: a HEAD each for a few, ListObjectsV2 by their common prefix for
    many (10,000 keys: 10 listing calls instead of 10,000 HEADs)."""
    wanted = set(keys)
    if len(wanted) <= BULK_CHECK_THRESHOLD:
        return {key for key in wanted if head(s3, bucket, key) is not None}
    first, last = min(wanted), max(wanted)
    shared = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first))
    prefix = first[:shared]  # S3 prefixes are strings, not paths
    found: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        found.update(item["Key"] for item in page.get("Contents", []) if item["Key"] in wanted)
    return found


def is_already_published(
    s3: S3Client, bucket: str, key: str, sha256: str, size: int, *, present: bool | None = None
) -> bool:
    """True when `key` holds exactly these bytes, False when absent; refuses different bytes. `present`
    False (from a listing) skips the HEAD of a key known to be absent."""
    metadata = head(s3, bucket, key) if present is not False else None
    if metadata is None:
        return False
    if metadata.get("ContentLength") != size or _remote_sha256(s3, bucket, key, metadata) != sha256:
        raise DifferentContentError(
            f"s3://{bucket}/{key} already exists with different content; refusing to overwrite it "
            "(a changed model needs a new key: rebuild it so its content hash changes the name)"
        )
    return True


@contextmanager
def only_if_absent(s3: S3Client, bucket: str, key: str) -> Iterator[None]:
    """While the block runs, every PutObject or CompleteMultipartUpload of `key` carries `If-None-Match: *`.

    boto3's transfer manager (s3transfer 0.19.3, the newest release) does not accept IfNoneMatch among its
    upload arguments (`TransferManager.ALLOWED_UPLOAD_ARGS`), so the parameter is added through botocore's
    event system, on this client, for this one bucket and key: the single PutObject of a small file, or the
    CompleteMultipartUpload that creates a large one (CreateMultipartUpload and UploadPart take no condition;
    S3 user guide, "Conditional writes").
    """

    def add_condition(params: dict[str, Any], **_: Any) -> None:
        if params.get("Bucket") == bucket and params.get("Key") == key:
            params["IfNoneMatch"] = "*"

    events = s3.meta.events
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


def _lost_race_error(bucket: str, key: str, attempts: int) -> PublishError:
    return PublishError(
        f"s3://{bucket}/{key}: another writer kept writing the same key ({attempts} attempts); try again"
    )


def publish_objects(
    s3: S3Client,
    bucket: str,
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
    present = existing_keys(s3, bucket, [prefix + item.key for item in items])
    for item in items:
        key = prefix + item.key
        if is_already_published(s3, bucket, key, item.sha256, item.size, present=key in present):
            skipped.append(key)
        else:
            pending.append((key, item))
    uploaded = []
    for key, item in pending:
        if _create_file(s3, bucket, key, item, content_type, transfer_config, progress):
            uploaded.append(key)
        else:
            skipped.append(key)
    return uploaded, skipped


def _create_file(
    s3: S3Client,
    bucket: str,
    key: str,
    item: LocalObject,
    content_type: str,
    transfer_config: TransferConfig | None,
    progress: ProgressFactory | None,
) -> bool:
    """Upload `item` to `key` if absent: True when written, False when the same bytes got there first."""
    for _ in range(CREATE_ATTEMPTS):
        try:
            with only_if_absent(s3, bucket, key):
                s3.upload_file(
                    str(item.path),
                    bucket,
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
                if is_already_published(s3, bucket, key, item.sha256, item.size):
                    return False
            elif code != CONDITIONAL_CONFLICT:
                raise
            # 409: a concurrent conditional write was in flight; S3 asks for the whole upload again.
    raise _lost_race_error(bucket, key, CREATE_ATTEMPTS)


def put_json(s3: S3Client, bucket: str, key: str, body: bytes, digest: str, **condition: str) -> Any:
    """Write a small JSON object with its sha256 recorded (manifests, figures), under `condition`
    (IfNoneMatch or IfMatch); returns S3's answer."""
    return s3.put_object(
        Bucket=bucket,
        Key=key,
        Body=body,
        ContentType=JSON_CONTENT_TYPE,
        Metadata={SHA256_METADATA_KEY: digest},
        ChecksumAlgorithm="SHA256",
        **condition,
    )


def create_json(s3: S3Client, bucket: str, key: str, body: bytes) -> bool:
    """Write a JSON object that never changes (an immutable manifest copy, figures) if `key` is absent.

    True when written, False when the key already holds these bytes; DifferentContentError when it holds
    others.
    """
    digest = hashlib.sha256(body).hexdigest()
    for _ in range(CREATE_ATTEMPTS):
        if is_already_published(s3, bucket, key, digest, len(body)):
            return False
        try:
            put_json(s3, bucket, key, body, digest, IfNoneMatch="*")
            return True
        except ClientError as error:
            if error_code(error) not in (PRECONDITION_FAILED, CONDITIONAL_CONFLICT):
                raise
    raise _lost_race_error(bucket, key, CREATE_ATTEMPTS)


def _parse_manifest(bucket: str, key: str, body: bytes) -> Manifest:
    try:
        return Manifest.from_json(body.decode("utf-8"))
    except (ValueError, ValidationError) as error:
        raise PublishError(f"s3://{bucket}/{key}: not a valid manifest ({first_line(error)})") from None


@dataclass(frozen=True)
class LiveManifest:
    """The live pointer as read: its manifest and ETag, or neither when nothing is published yet."""

    manifest: Manifest | None
    etag: str | None
    body: bytes | None = None


def read_live_manifest(s3: S3Client, bucket: str, manifest_prefix: str) -> LiveManifest:
    key = live_manifest_key(manifest_prefix)
    try:
        response = s3.get_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if _is_missing(error):
            return LiveManifest(None, None)
        raise
    body = response["Body"].read()
    return LiveManifest(_parse_manifest(bucket, key, body), str(response["ETag"]), body)


def read_published_manifest(s3: S3Client, bucket: str, manifest_prefix: str) -> Manifest | None:
    """The current manifest, or None when nothing has been published yet."""
    return read_live_manifest(s3, bucket, manifest_prefix).manifest


def check_named_objects(
    s3: S3Client, bucket: str, manifest: Manifest, *, model_prefix: str, manifest_prefix: str
) -> None:
    """Every archive and companion file the manifest names must be in the bucket."""
    named = [model_prefix + t for t in sorted(manifest.target_models)]
    companions = [manifest_prefix + f for f in sorted(manifest.files)]
    present = existing_keys(s3, bucket, named) | existing_keys(s3, bucket, companions)
    for key in [*named, *companions]:
        if key not in present:
            raise PublishError(
                f"s3://{bucket}/{key}: named in the manifest but not in the bucket; "
                "refusing to publish the manifest"
            )


def update_live_manifest(
    s3: S3Client,
    bucket: str,
    change: Callable[[Manifest | None], Manifest],
    *,
    model_prefix: str,
    manifest_prefix: str,
) -> tuple[str, ...]:
    """Apply `change` to the live manifest and write the result, without losing a concurrent change.

    Reads the pointer and its ETag, computes the new manifest, checks that everything it names is in the
    bucket, writes its immutable `<sha256>.json` copy once, then replaces the pointer only if it still has
    that ETag. When another writer got in between (412, or 409 while its write was in flight), the pointer is
    read again and `change` applied to the newer manifest, at most POINTER_ATTEMPTS times. Returns the
    immutable copy's key and the pointer's key.
    """
    pointer = live_manifest_key(manifest_prefix)
    for _ in range(POINTER_ATTEMPTS):
        live = read_live_manifest(s3, bucket, manifest_prefix)
        manifest = change(live.manifest)
        check_named_objects(s3, bucket, manifest, model_prefix=model_prefix, manifest_prefix=manifest_prefix)
        body = manifest.to_json().encode("utf-8")
        versioned_key = f"{manifest_prefix}{manifest.sha256}.json"
        create_json(s3, bucket, versioned_key, body)
        if body == live.body:
            return versioned_key, pointer
        condition = {"IfMatch": live.etag} if live.etag else {"IfNoneMatch": "*"}
        try:
            put_json(s3, bucket, pointer, body, manifest.sha256, **condition)
            return versioned_key, pointer
        except ClientError as error:
            if error_code(error) not in (PRECONDITION_FAILED, CONDITIONAL_CONFLICT, *_GONE):
                raise
    raise _lost_race_error(bucket, pointer, POINTER_ATTEMPTS)


def publish_manifest(
    s3: S3Client, bucket: str, manifest: Manifest, *, model_prefix: str, manifest_prefix: str
) -> tuple[str, ...]:
    """Make `manifest` the live one: an immutable `<sha256>.json` copy, then `manifest.json`.

    Refuses when an archive or file the manifest names is not in the bucket, so readers never follow
    a manifest to a missing object.
    """
    return update_live_manifest(
        s3, bucket, lambda _: manifest, model_prefix=model_prefix, manifest_prefix=manifest_prefix
    )


@dataclass(frozen=True)
class BuildManifestReport:
    key: str
    written: bool  # False: the same manifest, or an earlier build's of this fingerprint, was already there


def publish_build_manifest(
    s3: S3Client,
    bucket: str,
    manifest: Manifest,
    fingerprint: str,
    *,
    model_prefix: str,
    manifest_prefix: str,
) -> BuildManifestReport:
    """Write a build's manifest under its fingerprint, once; never the live pointer.

    Everything it names must already be in the bucket. If a manifest for this fingerprint exists (an
    earlier build of the same inputs published first), that one is kept as long as everything it names is
    still there: the key is written once and never changes.
    """
    try:
        key = build_manifest_key(fingerprint, manifest_prefix)
    except ValueError as error:
        raise PublishError(
            f"--fingerprint: {error} (the build trigger sets MODEL_BUILD_FINGERPRINT)"
        ) from None
    check_named_objects(s3, bucket, manifest, model_prefix=model_prefix, manifest_prefix=manifest_prefix)
    body = manifest.to_json().encode("utf-8")
    try:
        return BuildManifestReport(key, create_json(s3, bucket, key, body))
    except DifferentContentError:
        earlier = _parse_manifest(bucket, key, s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        check_named_objects(s3, bucket, earlier, model_prefix=model_prefix, manifest_prefix=manifest_prefix)
        return BuildManifestReport(key, False)


def upload_build(
    s3: S3Client,
    directory: Path,
    bucket: str,
    *,
    prefix: str = MODEL_PREFIX,
    manifest_prefix: str = MANIFEST_PREFIX,
    transfer_config: TransferConfig | None = None,
    progress: ProgressFactory | None = None,
    make_live: bool = True,
) -> PublishReport:
    """Publish a build directory: check locally, check every key, upload, then (with `make_live`) make its
    manifest the live one. The build runner passes `make_live=False` and publishes its manifest under the
    build's fingerprint instead (`publish_build_manifest`)."""
    model_prefix, manifest_prefix = normalise_prefix(prefix), normalise_prefix(manifest_prefix)
    check_prefixes(model_prefix, manifest_prefix)
    manifest = read_local_manifest(directory)
    with private_directory("upload-") as private:
        return _upload_checked(
            s3, directory, private, bucket, manifest, model_prefix, manifest_prefix, transfer_config,
            progress, make_live,
        )  # fmt: skip


def _upload_checked(
    s3: S3Client,
    directory: Path,
    private: Path,
    bucket: str,
    manifest: Manifest,
    model_prefix: str,
    manifest_prefix: str,
    transfer_config: TransferConfig | None,
    progress: ProgressFactory | None,
    make_live: bool,
) -> PublishReport:
    objects = check_local_archives(directory, manifest, private)
    companions = check_local_companions(directory, manifest, private)
    uploaded, skipped = publish_objects(
        s3, bucket, model_prefix, objects, transfer_config=transfer_config, progress=progress
    )
    for content_type in sorted({companion_content_type(item.key) for item in companions}):
        more_uploaded, more_skipped = publish_objects(
            s3,
            bucket,
            manifest_prefix,
            [item for item in companions if companion_content_type(item.key) == content_type],
            content_type=content_type,
        )
        uploaded += more_uploaded
        skipped += more_skipped
    manifest_keys: tuple[str, ...] = ()
    if make_live:
        manifest_keys = publish_manifest(
            s3, bucket, manifest, model_prefix=model_prefix, manifest_prefix=manifest_prefix
        )
    return PublishReport(uploaded=tuple(uploaded), skipped=tuple(skipped), manifest_keys=manifest_keys)

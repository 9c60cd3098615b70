"""Publish built archives and their manifest to S3 without ever exposing a half-published state.

The endpoint loads archives by key (TargetModel) and caches them by that key, so a key, once
written, must never change its bytes. Every key is checked before anything is uploaded, and the
manifest, which tells readers which keys to use, is written only after all its archives exist.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError
from pydantic import ValidationError

from triton_mme.core.errors import UserError
from triton_mme.core.files import file_sha256
from triton_mme.core.locations import MANIFEST_PREFIX, MODEL_PREFIX
from triton_mme.core.manifest import MANIFEST_FILE_NAME, Manifest
from triton_mme.core.naming import COMPANION_NAME

ARCHIVE_CONTENT_TYPE = "application/gzip"
JSON_CONTENT_TYPE = "application/json"
# Object metadata holding the sha256 of the whole object: S3's own SHA256 checksum of a multipart
# upload is a checksum of part checksums, so it cannot be compared with a file's digest.
SHA256_METADATA_KEY = "sha256"
_HASH_CHUNK = 8 * 1024 * 1024

S3Client = Any  # boto3 clients are generated at run time and carry no static type
# Called with (key, size) before an upload; returns the transfer manager's bytes-sent callback.
ProgressFactory = Callable[[str, int], Callable[[int], None]]


class PublishError(UserError):
    """Publishing cannot go ahead; the message is one line naming the object and the problem."""


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


def read_local_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST_FILE_NAME
    try:
        return Manifest.read(path)
    except OSError as error:
        raise PublishError(f"{path}: cannot read the build manifest ({error.strerror})") from None
    except (ValueError, ValidationError) as error:
        reason = str(error).splitlines()[0]
        raise PublishError(f"{path}: not a valid build manifest ({reason})") from None


def check_local_archives(directory: Path, manifest: Manifest) -> list[LocalObject]:
    """Every archive the manifest names must be present with the recorded size and sha256."""
    objects = []
    for record in manifest.archives:
        path = directory / record.target_model
        if not path.is_file():
            raise PublishError(f"{path}: archive named in the manifest is missing")
        size = path.stat().st_size
        if size != record.size_bytes:
            raise PublishError(f"{path}: size {size} bytes does not match the manifest ({record.size_bytes})")
        digest = file_sha256(path)
        if digest != record.sha256:
            raise PublishError(f"{path}: sha256 {digest} does not match the manifest ({record.sha256})")
        objects.append(LocalObject(path=path, key=record.target_model, sha256=digest, size=size))
    return objects


def check_local_companions(directory: Path, manifest: Manifest) -> list[LocalObject]:
    """Every companion file (labels, tokenizer) the manifest names, with the content its name states."""
    objects = []
    for name in sorted(manifest.files):
        path = directory / name
        if not path.is_file():
            raise PublishError(f"{path}: file named in the manifest is missing")
        digest = file_sha256(path)
        named = COMPANION_NAME.match(name)
        if named is None or not digest.startswith(named["digest"]):
            raise PublishError(f"{path}: its content (sha256 {digest[:16]}...) does not match its name")
        objects.append(LocalObject(path=path, key=name, sha256=digest, size=path.stat().st_size))
    return objects


def _is_missing(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound")


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


def is_already_published(s3: S3Client, bucket: str, key: str, sha256: str, size: int) -> bool:
    """True when `key` holds exactly these bytes, False when absent; refuses different bytes."""
    metadata = head(s3, bucket, key)
    if metadata is None:
        return False
    if metadata.get("ContentLength") != size or _remote_sha256(s3, bucket, key, metadata) != sha256:
        raise PublishError(
            f"s3://{bucket}/{key} already exists with different content; refusing to overwrite it "
            "(a changed model needs a new key: rebuild it so its content hash changes the name)"
        )
    return True


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

    Every key is checked before the first upload, so a conflict leaves the bucket untouched.
    """
    pending, skipped = [], []
    for item in objects:
        key = prefix + item.key
        if is_already_published(s3, bucket, key, item.sha256, item.size):
            skipped.append(key)
        else:
            pending.append((key, item))
    for key, item in pending:
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
            Config=transfer_config or TransferConfig(),
            Callback=progress(key, item.size) if progress else None,
        )
    return [key for key, _ in pending], skipped


def read_published_manifest(s3: S3Client, bucket: str, manifest_prefix: str) -> Manifest | None:
    """The current manifest, or None when nothing has been published yet."""
    key = manifest_prefix + MANIFEST_FILE_NAME
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as error:
        if _is_missing(error):
            return None
        raise
    try:
        return Manifest.from_json(body.decode("utf-8"))
    except (ValueError, ValidationError) as error:
        reason = str(error).splitlines()[0]
        raise PublishError(f"s3://{bucket}/{key}: not a valid manifest ({reason})") from None


def publish_manifest(
    s3: S3Client, bucket: str, manifest: Manifest, *, model_prefix: str, manifest_prefix: str
) -> tuple[str, ...]:
    """Write an immutable `<sha256>.json` copy, then make it current as `manifest.json`.

    Refuses when an archive or file the manifest names is not in the bucket, so readers never follow
    a manifest to a missing object.
    """
    named = [model_prefix + t for t in sorted(manifest.target_models)]
    named += [manifest_prefix + f for f in sorted(manifest.files)]
    for key in named:
        if head(s3, bucket, key) is None:
            raise PublishError(
                f"s3://{bucket}/{key}: named in the manifest but not in the bucket; "
                "refusing to publish the manifest"
            )
    body = manifest.to_json().encode("utf-8")
    digest = manifest.sha256
    versioned_key = f"{manifest_prefix}{digest}.json"
    if not is_already_published(s3, bucket, versioned_key, digest, len(body)):
        put_json(s3, bucket, versioned_key, body, digest)
    current_key = manifest_prefix + MANIFEST_FILE_NAME
    put_json(s3, bucket, current_key, body, digest)
    return versioned_key, current_key


def put_json(s3: S3Client, bucket: str, key: str, body: bytes, digest: str) -> None:
    """Write a small JSON object with its sha256 recorded (manifests, figures)."""
    s3.put_object(
        Bucket=bucket,
        Key=key,
        Body=body,
        ContentType=JSON_CONTENT_TYPE,
        Metadata={SHA256_METADATA_KEY: digest},
        ChecksumAlgorithm="SHA256",
    )


def upload_build(
    s3: S3Client,
    directory: Path,
    bucket: str,
    *,
    prefix: str = MODEL_PREFIX,
    manifest_prefix: str = MANIFEST_PREFIX,
    transfer_config: TransferConfig | None = None,
    progress: ProgressFactory | None = None,
) -> PublishReport:
    """Publish a build directory: check locally, check every key, upload, then the manifest."""
    model_prefix, manifest_prefix = normalise_prefix(prefix), normalise_prefix(manifest_prefix)
    check_prefixes(model_prefix, manifest_prefix)
    manifest = read_local_manifest(directory)
    objects = check_local_archives(directory, manifest)
    companions = check_local_companions(directory, manifest)
    uploaded, skipped = publish_objects(
        s3, bucket, model_prefix, objects, transfer_config=transfer_config, progress=progress
    )
    more_uploaded, more_skipped = publish_objects(
        s3, bucket, manifest_prefix, companions, content_type=JSON_CONTENT_TYPE
    )
    uploaded += more_uploaded
    skipped += more_skipped
    manifest_keys = publish_manifest(
        s3, bucket, manifest, model_prefix=model_prefix, manifest_prefix=manifest_prefix
    )
    return PublishReport(uploaded=tuple(uploaded), skipped=tuple(skipped), manifest_keys=manifest_keys)

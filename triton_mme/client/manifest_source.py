"""Where a client reads the manifest and its companion files: a build directory or the model store.

`build/models/manifest.json` after a local build, or `s3://<bucket>/manifests/manifest.json` for an
application that calls the deployed endpoint. Companion files (labels, tokenizer) are read from beside
the manifest in both cases; the serving report from beside it locally and by the manifest's digest in the
store.

`record(name)` reads one model's record, not the whole manifest, and keeps what it read. In the store: a HEAD
of the manifest gives its sha256 (object metadata), the manifest's index (core.manifest_index) where each
model's record lies, and one ranged GET the record: three small requests however large the catalog (a
manifest published without an index is read whole, once). Freshness: for `max_age_s` seconds after a check
the kept answer is used as is; the first call after that checks the manifest's digest again (one HEAD) and
starts over when a promotion or an `add` moved it. In a build directory the manifest file is parsed once and
again only when its size or modification time changes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from triton_mme.core.bounded import DocumentError, load_json
from triton_mme.core.errors import (
    UserError,
    aws_error_code,
    describe_aws_error,
    describe_validation_error,
    first_line,
)
from triton_mme.core.limits import MAX_COMPANION_BYTES, MAX_LABELS_BYTES, MAX_MANIFEST_BYTES, MAX_REPORT_BYTES
from triton_mme.core.locations import (
    SERVING_REPORT_FILE_NAME,
    SHA256_PATTERN,
    manifest_index_keys,
    manifest_prefix_of,
    serving_report_key,
)
from triton_mme.core.manifest import ArchiveRecord, Manifest
from triton_mme.core.manifest_index import MAX_INDEX_BYTES, ManifestIndex, parse_record
from triton_mme.core.naming import COMPANION_NAME

if TYPE_CHECKING:
    from triton_mme.core.serving_report import ServingReport

S3_SCHEME = "s3://"
# How long a kept record answers without a check of the manifest's digest (see the module docstring): a
# promotion reaches a long-running client within a minute, at one HEAD a minute.
DEFAULT_MAX_AGE_S = 60.0
# The object metadata in which the store records a manifest's sha256 (store.publish, the promotion handler).
SHA256_METADATA_KEY = "sha256"


class ManifestError(UserError, ValueError):
    """A manifest (or a file it names) that cannot be read; one line."""


class _Absent(ManifestError):
    """The file or object does not exist (as opposed to existing and being unreadable)."""


@dataclass
class _Kept:
    """What a ManifestSource read, for the manifest of one digest (or one local file's size and mtime)."""

    version: object = None
    checked_at: float | None = None
    index: ManifestIndex | None = None
    no_index: bool = False
    manifest: Manifest | None = None
    records: dict[tuple[str, str | None], ArchiveRecord] = field(default_factory=dict)
    client: Any = None


@dataclass(frozen=True)
class ManifestSource:
    """A manifest's location; keeps what `record` read (not thread-safe: one per thread)."""

    location: str
    s3: Any = None  # a boto3 S3 client, for s3:// locations
    max_age_s: float = DEFAULT_MAX_AGE_S
    _kept: _Kept = field(default_factory=_Kept, compare=False, repr=False)

    @property
    def is_s3(self) -> bool:
        return self.location.startswith(S3_SCHEME)

    def _sibling(self, name: str) -> str:
        return (
            f"{self.location.rsplit('/', 1)[0]}/{name}"
            if self.is_s3
            else str(Path(self.location).parent / name)
        )

    def exists(self) -> bool:
        return self.is_s3 or Path(self.location).is_file()

    def _read(self, location: str, max_bytes: int = MAX_MANIFEST_BYTES) -> bytes:
        """The bytes at `location`, refused past `max_bytes` (read no further than that)."""
        body = self._read_at_most(location, max_bytes)
        if len(body) > max_bytes:
            raise ManifestError(f"{location}: more than {max_bytes:,} bytes; allowed at most {max_bytes:,}")
        return body

    def _read_at_most(self, location: str, max_bytes: int) -> bytes:
        if not location.startswith(S3_SCHEME):
            try:
                with Path(location).open("rb") as stream:
                    return stream.read(max_bytes + 1)
            except FileNotFoundError as error:
                raise _Absent(f"{location}: cannot read it ({error.strerror})") from None
            except OSError as error:
                raise ManifestError(f"{location}: cannot read it ({error.strerror})") from None
        return self._s3_call(location, "get_object", max_bytes=max_bytes)

    def _client(self) -> Any:
        if self.s3 is not None:
            return self.s3
        if self._kept.client is None:
            import boto3

            from triton_mme.client.transport import one_attempt

            self._kept.client = boto3.client("s3", config=one_attempt())
        return self._kept.client

    def _s3_call(self, location: str, operation: str, *, max_bytes: int = 0, **extra: Any) -> Any:
        """GetObject (the body, at most `max_bytes` + 1 bytes read) or HeadObject (the answer) of an s3://
        location; _Absent or ManifestError with one line."""
        bucket, _, key = location.removeprefix(S3_SCHEME).partition("/")
        try:
            answer = getattr(self._client(), operation)(Bucket=bucket, Key=key, **extra)
            return bytes(answer["Body"].read(max_bytes + 1)) if operation == "get_object" else answer
        except Exception as error:  # botocore's ClientError and friends: one line either way
            absent = aws_error_code(error) in ("NoSuchKey", "404", "NotFound")
            raise (_Absent if absent else ManifestError)(
                f"{location}: cannot read it ({describe_aws_error(error)})"
            ) from None

    def record(self, name: str, format: str | None = None) -> ArchiveRecord:
        """The record of model `name` (in `format`, when it has several) in the current manifest, kept
        (see the module docstring for when it is checked again); KeyError with one line for an unknown name
        (the closest few known and their count)."""
        kept = self._fresh()
        found = kept.records.get((name, format))
        if found is not None:
            return found
        if kept.index is None and not kept.no_index and self.is_s3:
            kept.index = self._read_index(kept.version)
            kept.no_index = kept.index is None
        if kept.index is None:
            if kept.manifest is None:
                kept.manifest = self.manifest()
            found = kept.manifest.find(name, format)
        else:
            offset, length = kept.index.byte_range(name, format)
            _, records = manifest_index_keys(kept.index.manifest_sha256, self._prefix())
            where = f"{S3_SCHEME}{self._bucket()}/{records}"
            body = self._s3_call(
                where, "get_object", max_bytes=length, Range=f"bytes={offset}-{offset + length - 1}"
            )
            try:
                found = parse_record(body, where=where, name=name)
            except ValueError as error:
                raise ManifestError(str(error)) from None
        kept.records[(name, format)] = found
        return found

    def _bucket(self) -> str:
        return self.location.removeprefix(S3_SCHEME).partition("/")[0]

    def _prefix(self) -> str:
        return manifest_prefix_of(self.location.removeprefix(S3_SCHEME).partition("/")[2])

    def _fresh(self) -> _Kept:
        """The kept state, checked against the manifest's current version when older than max_age_s."""
        kept, now = self._kept, time.monotonic()
        if kept.checked_at is not None and now - kept.checked_at < self.max_age_s:
            return kept
        version = self._version()
        if version != kept.version or version is None:
            kept.version, kept.index, kept.no_index, kept.manifest = version, None, False, None
            kept.records.clear()
        kept.checked_at = now
        return kept

    def _version(self) -> object:
        """The store's recorded sha256 of the manifest (None when it has none: then it is read whole), or the
        local file's size and modification time."""
        if not self.is_s3:
            try:
                stat = Path(self.location).stat()
            except OSError:
                return None
            return (stat.st_size, stat.st_mtime_ns)
        answer = self._s3_call(self.location, "head_object")
        digest = str(answer.get("Metadata", {}).get(SHA256_METADATA_KEY, ""))
        return digest if SHA256_PATTERN.fullmatch(digest) else None

    def _read_index(self, digest: object) -> ManifestIndex | None:
        if not isinstance(digest, str):
            return None
        index, _ = manifest_index_keys(digest, self._prefix())
        where = f"{S3_SCHEME}{self._bucket()}/{index}"
        try:
            body = self._read(where, MAX_INDEX_BYTES)
        except _Absent:
            return None  # published before indexes, or by another tool: the manifest is read whole
        try:
            return ManifestIndex.parse(body, where=where, manifest_sha256=digest)
        except ValueError as error:
            raise ManifestError(str(error)) from None

    def manifest(self) -> Manifest:
        body = self._read(self.location)
        try:
            return Manifest.from_json(body.decode("utf-8"))
        except (ValueError, ValidationError, UnicodeDecodeError) as error:
            raise ManifestError(f"{self.location}: not a valid manifest ({first_line(error)})") from None

    def companion(self, name: str) -> bytes:
        """A file the manifest names (checked against the naming rule, so it never leaves its folder)."""
        named = COMPANION_NAME.check(name, where=f"{self.location}: companion file")
        limit = MAX_LABELS_BYTES if named["role"] == "labels" else MAX_COMPANION_BYTES
        return self._read(self._sibling(name), limit)

    def serving_report(self, manifest: Manifest) -> ServingReport | None:
        """The serving check's report of `manifest`; None where there is none.

        In a build directory it is `serving-report.json` beside the manifest (where `serving-check` writes
        it); in the model store it is `<manifest prefix><manifest sha256>.serving-report.json`, where the
        check stage publishes it (core.locations), found alike from the live pointer and a build's manifest.
        """
        from triton_mme.core.serving_report import ServingReport

        if self.is_s3:
            bucket_and_key = self.location.removeprefix(S3_SCHEME)
            bucket, _, key = bucket_and_key.partition("/")
            report_key = serving_report_key(manifest.sha256, manifest_prefix_of(key))
            location = f"{S3_SCHEME}{bucket}/{report_key}"
        else:
            location = self._sibling(SERVING_REPORT_FILE_NAME)
        try:
            body = self._read(location, MAX_REPORT_BYTES)
        except _Absent:
            return None
        try:
            return ServingReport.model_validate(load_json(body, where=location, max_bytes=MAX_REPORT_BYTES))
        except DocumentError as error:
            raise ManifestError(str(error)) from None
        except ValidationError as error:
            raise ManifestError(
                f"{location}: not a valid serving report ({describe_validation_error(error, whole='report')})"
            ) from None

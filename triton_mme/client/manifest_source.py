"""Where a client reads the manifest and its companion files: a build directory or the model store.

`build/models/manifest.json` after a local build, or `s3://<bucket>/manifests/manifest.json` for an
application that calls the deployed endpoint. Companion files (labels, tokenizer) are read from beside
the manifest in both cases; the serving report from beside it locally and by the manifest's digest in the
store.
"""

from __future__ import annotations

from dataclasses import dataclass
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
from triton_mme.core.locations import SERVING_REPORT_FILE_NAME, manifest_prefix_of, serving_report_key
from triton_mme.core.manifest import Manifest
from triton_mme.core.naming import COMPANION_NAME

if TYPE_CHECKING:
    from triton_mme.core.serving_report import ServingReport

S3_SCHEME = "s3://"


class ManifestError(UserError, ValueError):
    """A manifest (or a file it names) that cannot be read; one line."""


class _Absent(ManifestError):
    """The file or object does not exist (as opposed to existing and being unreadable)."""


@dataclass(frozen=True)
class ManifestSource:
    location: str
    s3: Any = None  # a boto3 S3 client, for s3:// locations

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
        bucket, _, key = location.removeprefix(S3_SCHEME).partition("/")
        client = self.s3
        if client is None:
            import boto3

            from triton_mme.client.transport import one_attempt

            client = boto3.client("s3", config=one_attempt())
        try:
            return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read(max_bytes + 1))
        except Exception as error:  # botocore's ClientError and friends: one line either way
            absent = aws_error_code(error) in ("NoSuchKey", "404")
            raise (_Absent if absent else ManifestError)(
                f"{location}: cannot read it ({describe_aws_error(error)})"
            ) from None

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

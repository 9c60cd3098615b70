"""Preflight: every S3 checkpoint of the catalog is there, readable, and unchanged since `triton-mme lock`.

One HeadObject per locked object (a Hugging Face folder's files each): a missing object, a refused read or
an ETag other than the locked one is a failed check naming the model, before any GPU minute. The build
still hashes what it downloads against the pin; the ETag only tells a change early.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from triton_mme.catalog import Catalog
from triton_mme.core.errors import aws_error_code, describe_aws_error, quoted
from triton_mme_cdk.preflight.checks import CheckResult, reports_aws_errors

NAME = "checkpoints"


def _objects(catalog: Catalog) -> list[tuple[str, str, str, str]]:
    """(model, bucket, key, locked ETag) of every S3 object the catalog's checkpoints pin."""
    objects = []
    for entry in catalog.checkpoints:
        location = entry.checkpoint_location
        if not location.is_s3 or entry.pin is None:
            continue
        for name, etag in sorted(entry.pin.etags.items()):
            key = location.joined(name).key if name else location.key
            objects.append((entry.name, location.bucket, key, etag))
    return objects


@reports_aws_errors(NAME)
def check_checkpoints(s3: Any, catalog: Catalog) -> CheckResult:
    objects = _objects(catalog)
    if not objects:
        return CheckResult(NAME, True, "no S3 checkpoint in the catalog")
    for model, bucket, key, etag in objects:
        where = f"model {quoted(model)}: s3://{bucket}/{key}"
        try:
            head = s3.head_object(Bucket=bucket, Key=key)
        except ClientError as error:
            code = aws_error_code(error)
            if code in ("403", "AccessDenied", "Forbidden"):
                return CheckResult(
                    NAME,
                    False,
                    f"{where}: access denied",
                    "let the credentials running preflight read it (s3:GetObject); the build runner is "
                    "granted exactly the catalog's checkpoints",
                )
            if code in ("404", "NoSuchKey", "NotFound"):
                return CheckResult(
                    NAME, False, f"{where}: no such object", "upload it, or run triton-mme lock"
                )
            return CheckResult(
                NAME, False, f"{where}: {describe_aws_error(error)}", "check the bucket and region"
            )
        if head.get("ETag") != etag:
            return CheckResult(
                NAME,
                False,
                f"{where}: changed since the lock file (ETag {head.get('ETag')}, locked {etag})",
                "run triton-mme lock and commit models.lock.yaml, or restore the locked object",
            )
    return CheckResult(NAME, True, f"{len(objects)} S3 objects of the catalog's checkpoints as locked")

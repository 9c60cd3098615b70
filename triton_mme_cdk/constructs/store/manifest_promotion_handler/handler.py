"""Makes a build's manifest the live one once the endpoint serves this deployment: the custom resource
provider's on-event handler (docs/updates.md).

The resource depends on the endpoint, so CloudFormation calls it after the endpoint update succeeded:

- Create and Update wait (SageMaker's own `endpoint_in_service` waiter, only while a scaling activity keeps
  the endpoint settling) until it is InService, check that it serves the endpoint config this
  deployment created (SageMaker may have rolled the update back and still answer InService), then copy the
  build's manifest (`BuildManifestKey`, written once by the build) over the live pointer (`LiveManifestKey`).
  The copy replaces the pointer only if it is still the version read (If-Match on its ETag, or If-None-Match
  when there is none yet); another writer in between makes it read again, a bounded number of times.
- CloudFormation's rollback is an Update back to the previous properties: the previous fingerprint's
  manifest is promoted back, after the same check against the previous endpoint config.
- Delete leaves the pointer: the store outlives the stack.
- Only a build every archive of which a passing serving report of this fingerprint's candidates (or of the
  manifest itself) names is promoted: a forged SUCCESS on the build's wait condition moves nothing unchecked.

The physical id is the pointer's location and never changes, so CloudFormation never sends the Delete that
follows a replacement.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from typing import Any

import boto3
from botocore.exceptions import ClientError, WaiterError

# DescribeEndpoint's EndpointStatus values that are on their way to another status.
SETTLING = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack"})
MISSING = frozenset({"404", "NoSuchKey", "NotFound"})
# S3's answers to a conditional write that lost (412), raced another (409) or found the pointer deleted.
LOST = frozenset({"PreconditionFailed", "ConditionalRequestConflict", *MISSING})
POINTER_ATTEMPTS = 5
# Within the function's 13 minutes (manifest_promotion.py).
SETTLED = {"Delay": 15, "MaxAttempts": 48}
# Where the serving check publishes (triton_mme.core.locations, which this handler cannot import: it ships
# alone; a test checks both name the same).
CANDIDATE_PREFIX = "candidate-"
REPORT_SUFFIX = ".serving-report.json"


class PromotionRefused(RuntimeError):
    """The live manifest was not moved; the message says why and where it stays."""


@functools.cache
def client(service: str) -> Any:
    return boto3.client(service)


def on_event(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    properties = event["ResourceProperties"]
    where = f"s3://{properties['Bucket']}/{properties['LiveManifestKey']}"
    answer: dict[str, Any] = {"PhysicalResourceId": event.get("PhysicalResourceId") or where}
    if event["RequestType"] == "Delete":
        return answer
    name, expected = properties["EndpointName"], properties["EndpointConfigName"]
    endpoint = client("sagemaker").describe_endpoint(EndpointName=name)
    if endpoint["EndpointStatus"] in SETTLING:
        with contextlib.suppress(WaiterError):  # what it settled on is checked below, in one line
            waiter = client("sagemaker").get_waiter("endpoint_in_service")
            waiter.wait(EndpointName=name, WaiterConfig=SETTLED)
        endpoint = client("sagemaker").describe_endpoint(EndpointName=name)
    status, serving = endpoint["EndpointStatus"], endpoint.get("EndpointConfigName")
    if status != "InService" or serving != expected:
        reason = endpoint.get("FailureReason")
        raise PromotionRefused(
            f"endpoint {name} is {status} on endpoint config {serving}, not on {expected}, which this "
            f"deployment created{f' ({reason})' if reason else ''}; the live manifest {where} stays as it was"
        )
    outcome = promote(properties)
    print(f"{where}: {outcome} (fingerprint {properties['Fingerprint']}, endpoint config {expected})")
    return {**answer, "Data": {"Outcome": outcome}}


def promote(properties: dict[str, str]) -> str:
    """Copy the build's manifest over the live pointer, conditionally; returns what happened."""
    s3, bucket = client("s3"), properties["Bucket"]
    source, pointer = properties["BuildManifestKey"], properties["LiveManifestKey"]
    body = _read(s3, bucket, source)
    if body is None:
        raise PromotionRefused(
            f"no build manifest at s3://{bucket}/{source} for fingerprint {properties['Fingerprint']}; the "
            f"build publishes it last (publish-build); the live manifest stays as it was"
        )
    for key in _named_keys(json.loads(body), properties["ModelPrefix"], properties["ManifestPrefix"]):
        if _head(s3, bucket, key) is None:
            raise PromotionRefused(
                f"s3://{bucket}/{source} names s3://{bucket}/{key}, which is not in the bucket; the live "
                "manifest stays as it was"
            )
    digest = hashlib.sha256(body).hexdigest()
    unchecked = _unchecked(s3, bucket, source, properties["ManifestPrefix"], json.loads(body), digest)
    if unchecked:
        raise PromotionRefused(
            f"s3://{bucket}/{source}: {len(unchecked)} archive(s) without a passing serving report (first: "
            f"{unchecked[0]}); only a checked build is promoted; the live manifest stays as it was"
        )
    for _ in range(POINTER_ATTEMPTS):
        current = _read_with_etag(s3, bucket, pointer)
        if current is not None and current[0] == body:
            return f"already {source}"
        condition = {"IfMatch": current[1]} if current is not None else {"IfNoneMatch": "*"}
        try:
            s3.put_object(
                Bucket=bucket,
                Key=pointer,
                Body=body,
                ContentType="application/json",
                Metadata={"sha256": digest},
                ChecksumAlgorithm="SHA256",
                **condition,
            )
            return f"promoted {source}"
        except ClientError as error:
            if _code(error) not in LOST:
                raise
    raise PromotionRefused(
        f"s3://{bucket}/{pointer} kept changing while it was promoted ({POINTER_ATTEMPTS} tries)"
    )


def _unchecked(
    s3: Any, bucket: str, source: str, prefix: str, manifest: dict[str, Any], digest: str
) -> list[str]:
    """The manifest's archives that no passing report of it, or of a candidate of its build, names."""
    folder = source.rsplit("/", 1)[0] + f"/{CANDIDATE_PREFIX}"
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=folder).get("Contents", [])
    digests = {digest, *(item["Key"].removeprefix(folder).removesuffix(".json") for item in listed)}
    passed: set[str] = set()
    for checked in sorted(digests):
        report = _read(s3, bucket, f"{prefix}{checked}{REPORT_SUFFIX}")
        document = json.loads(report) if report is not None else {}
        if document.get("manifest_sha256") == checked:
            passed |= {a["target_model"] for a in document.get("archives", []) if a.get("passed") is True}
    return sorted({archive["target_model"] for archive in manifest.get("archives", [])} - passed)


def _named_keys(manifest: dict[str, Any], model_prefix: str, manifest_prefix: str) -> list[str]:
    """Every archive and companion file a manifest names (triton_mme.core.manifest's schema)."""
    archives = manifest.get("archives", [])
    keys = [model_prefix + archive["target_model"] for archive in archives]
    keys += [manifest_prefix + name for archive in archives for name in archive.get("files", {}).values()]
    return sorted(set(keys))


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code"))


def _head(s3: Any, bucket: str, key: str) -> dict[str, Any] | None:
    try:
        return dict(s3.head_object(Bucket=bucket, Key=key))
    except ClientError as error:
        if _code(error) in MISSING:
            return None
        raise


def _read_with_etag(s3: Any, bucket: str, key: str) -> tuple[bytes, str] | None:
    try:
        response = s3.get_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if _code(error) in MISSING:
            return None
        raise
    return response["Body"].read(), str(response["ETag"])


def _read(s3: Any, bucket: str, key: str) -> bytes | None:
    found = _read_with_etag(s3, bucket, key)
    return None if found is None else found[0]

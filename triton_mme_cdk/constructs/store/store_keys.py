"""The model store's key layout in IAM: which keys of the bucket each reader and writer reaches, and the
bucket policy that makes every write conditional (the keys are triton_mme/core/locations.py's)."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from triton_mme.core import locations
from triton_mme.core.locations import (
    BUILD_CACHE_FOLDER,
    BUILDS_FOLDER,
    CANDIDATE_PREFIX,
    INDEX_SUFFIX,
    INTENTS_FOLDER,
    MANIFEST_FILE_NAME,
    MANIFEST_PREFIX,
    MODEL_PREFIX,
    RECORDS_SUFFIX,
    RUNS_FOLDER,
    SERVING_REPORT_SUFFIX,
    STAGED_SHARD_PREFIX,
)
from triton_mme.core.naming import COMPANION_SUFFIXES, CONTENT_HASH_LENGTH
from triton_mme.core.platform import PLATFORM

LIVE_MANIFEST_KEY = locations.live_manifest_key(MANIFEST_PREFIX)


def conditional_write_statements(bucket: s3.IBucket) -> list[iam.PolicyStatement]:
    """Deny, to every principal, a PutObject or CompleteMultipartUpload without its condition.

    The form is the S3 user guide's ("Enforce conditional writes on Amazon S3 buckets"): the
    s3:ObjectCreationOperation condition leaves out CreateMultipartUpload and UploadPart, which take no
    conditional header, so a multipart upload is judged by its completion. CopyObject into the bucket
    stops working under this policy; nothing here copies.
    """
    creates = {"Bool": {PLATFORM.limits.s3_condition_keys.object_creation: "true"}}
    pointer = bucket.arn_for_objects(LIVE_MANIFEST_KEY)
    return [
        iam.PolicyStatement(
            sid="CreateObjectsOnlyIfAbsent",
            effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()],
            actions=["s3:PutObject"],
            not_resources=[pointer],
            conditions={**creates, "Null": {PLATFORM.limits.s3_condition_keys.if_none_match: "true"}},
        ),
        iam.PolicyStatement(
            sid="ReplaceTheLiveManifestOnlyConditionally",
            effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()],
            actions=["s3:PutObject"],
            resources=[pointer],
            conditions={
                **creates,
                "Null": {
                    PLATFORM.limits.s3_condition_keys.if_none_match: "true",
                    PLATFORM.limits.s3_condition_keys.if_match: "true",
                },
            },
        ),
    ]


def read_arns(bucket: s3.IBucket) -> list[str]:
    """The archives and the manifests (everything a reader of the store may get)."""
    return [bucket.arn_for_objects(f"{prefix}*") for prefix in (MODEL_PREFIX, MANIFEST_PREFIX)]


def archive_write_arns(bucket: s3.IBucket) -> list[str]:
    """What a build writes, each key once: archives, the content-addressed files beside the manifests
    (`labels-<hash>.json`, `tokenizer-<hash>.json`, `golden-<hash>.npz`), its candidate manifest, the record
    of which candidate each shard staged in a run, and the build cache records of its archives
    (store.build_cache). Never a build manifest nor the live manifest: the serving check publishes the first,
    the deployment promotes the second."""
    objects = bucket.arn_for_objects
    suffixes = sorted({"json", *COMPANION_SUFFIXES.values()})
    return [
        objects(f"{MODEL_PREFIX}*"),
        *(objects(f"{MANIFEST_PREFIX}*-{'?' * CONTENT_HASH_LENGTH}.{suffix}") for suffix in suffixes),
        objects(f"{MANIFEST_PREFIX}{BUILDS_FOLDER}*/{CANDIDATE_PREFIX}*.json"),
        objects(f"{MANIFEST_PREFIX}{BUILDS_FOLDER}*/{RUNS_FOLDER}*/{STAGED_SHARD_PREFIX}*.json"),
        objects(f"{MANIFEST_PREFIX}{BUILD_CACHE_FOLDER}*.json"),
    ]


def build_write_arns(bucket: s3.IBucket) -> list[str]:
    """What the serving check writes, once each: the report of the checked manifest, then the build
    manifest's records and index (core.manifest_index), then the build's manifest."""
    objects = bucket.arn_for_objects
    return [
        objects(f"{MANIFEST_PREFIX}*{SERVING_REPORT_SUFFIX}"),
        objects(f"{MANIFEST_PREFIX}*{RECORDS_SUFFIX}"),
        objects(f"{MANIFEST_PREFIX}*{INDEX_SUFFIX}"),
        objects(f"{MANIFEST_PREFIX}{BUILDS_FOLDER}*/{MANIFEST_FILE_NAME}"),
    ]


def list_statement(bucket: s3.IBucket) -> iam.PolicyStatement:
    return iam.PolicyStatement(actions=["s3:ListBucket"], resources=[bucket.bucket_arn])


def deny_operator_keys(bucket: s3.IBucket) -> iam.PolicyStatement:
    """The keys only operators and the deployment write: the live manifest, and the intents of `add`,
    `upload` and `remove` (store.intents), which the runners' patterns under the manifest prefix would
    otherwise reach (IAM's `*` matches `/`: `manifests/*-????????????????.json` matches
    `manifests/intents/<model>/x-<16 characters>.json`, which the intent check counts as an intent),
    letting a runner block every operator's `add`, `upload` and `remove`."""
    return iam.PolicyStatement(
        effect=iam.Effect.DENY,
        actions=["s3:PutObject"],
        resources=[
            bucket.arn_for_objects(LIVE_MANIFEST_KEY),
            bucket.arn_for_objects(f"{MANIFEST_PREFIX}{INTENTS_FOLDER}*"),
        ],
    )


def grant(grantee: iam.IGrantable, statements: list[iam.PolicyStatement]) -> iam.Grant:
    """Each allow as a Grant on the grantee's principal policy (combined into one), each deny added beside
    them in order."""
    combined: iam.Grant | None = None
    for statement in statements:
        if statement.effect is iam.Effect.DENY:
            grantee.grant_principal.add_to_principal_policy(statement)
            continue
        added = iam.Grant.add_to_principal(
            grantee=grantee, actions=statement.actions, resource_arns=statement.resources
        )
        combined = added if combined is None else combined.combine(added)
    assert combined is not None
    return combined

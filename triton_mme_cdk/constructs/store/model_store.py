"""The model store: the bucket the endpoint loads archives from, and the grants on its key layout."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

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
    SERVING_REPORT_SUFFIX,
)
from triton_mme.core.naming import COMPANION_SUFFIXES, CONTENT_HASH_LENGTH
from triton_mme.core.platform import S3_IF_MATCH_KEY, S3_IF_NONE_MATCH_KEY, S3_OBJECT_CREATION_KEY
from triton_mme_cdk.constructs.scanners.checkov import skip_checks

NONCURRENT_VERSION_DAYS = 30
SERVER_ACCESS_LOGS_USE_BUCKET_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"
ACCESS_LOG_DAYS = 365


@dataclass(frozen=True, kw_only=True)
class ModelStoreProps:
    """The model store's props."""

    encryption_key: kms.IKey | None = None
    """The customer managed key that encrypts the model bucket (SSE-KMS, with an S3 Bucket Key).

    @default - SSE-S3 (S3 managed keys)
    """


class ModelStore(Construct):
    """The S3 bucket the endpoint loads archives from (`models/`) and the build stage writes to.

    Models and manifests survive stack deletion; replaced archives stay recoverable for
    NONCURRENT_VERSION_DAYS through versioning. The bucket policy makes every writer's writes conditional:
    an object is created only if its key is absent, and the live manifest is replaced only by a write that
    names the version it replaces (triton_mme/store/publish.py sends both).

    The store owns its key layout: whoever reads or writes it gets a `grant_*` (`grant_read_models` for the
    endpoint, `grant_read`, `grant_publish_archives` for the build, `grant_publish_builds` for the serving
    check, `grant_promote` for the deployment). `bucket` and `cfn_bucket` are the escape hatches.
    """

    model_prefix = MODEL_PREFIX
    manifest_prefix = MANIFEST_PREFIX
    live_manifest_key = locations.live_manifest_key(MANIFEST_PREFIX)

    def __init__(self, scope: Construct, construct_id: str, props: ModelStoreProps | None = None) -> None:
        super().__init__(scope, construct_id)
        # Access logs reach the log bucket through its bucket policy: an ACL (the CDK's older default, and the
        # default of an app without cdk.json's flags) cannot exist on a bucket that enforces its owner.
        self.node.set_context(SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, True)
        self.props = props = props or ModelStoreProps()
        encryption_key = self.encryption_key = props.encryption_key

        # Server access logs cannot be delivered to a KMS-encrypted bucket, so this one uses SSE-S3.
        self.access_log_bucket = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            # Versioned, so a deleted or overwritten log stays recoverable NONCURRENT_VERSION_DAYS.
            versioned=True,
            lifecycle_rules=[
                s3.LifecycleRule(
                    expiration=Duration.days(ACCESS_LOG_DAYS),
                    noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        skip_checks(
            self.access_log_bucket,
            {
                "CKV_AWS_18": "This bucket is the target of the model bucket's access logs: logging it to "
                "itself would log each delivery of its own logs, and to another bucket would only move the "
                "question to that one."
            },
        )

        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS if encryption_key else s3.BucketEncryption.S3_MANAGED,
            encryption_key=encryption_key,
            bucket_key_enabled=True if encryption_key else None,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            lifecycle_rules=[
                s3.LifecycleRule(
                    noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                )
            ],
            server_access_logs_bucket=self.access_log_bucket,
            server_access_logs_prefix="model-store/",
            removal_policy=RemovalPolicy.RETAIN,
        )
        self._require_conditional_writes()

    def _require_conditional_writes(self) -> None:
        """Deny, to every principal, a PutObject or CompleteMultipartUpload without its condition.

        The form is the S3 user guide's ("Enforce conditional writes on Amazon S3 buckets"): the
        s3:ObjectCreationOperation condition leaves out CreateMultipartUpload and UploadPart, which take no
        conditional header, so a multipart upload is judged by its completion. CopyObject into the bucket
        stops working under this policy; nothing here copies.
        """
        creates = {"Bool": {S3_OBJECT_CREATION_KEY: "true"}}
        pointer = self.bucket.arn_for_objects(self.live_manifest_key)
        for statement in (
            iam.PolicyStatement(
                sid="CreateObjectsOnlyIfAbsent",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["s3:PutObject"],
                not_resources=[pointer],
                conditions={**creates, "Null": {S3_IF_NONE_MATCH_KEY: "true"}},
            ),
            iam.PolicyStatement(
                sid="ReplaceTheLiveManifestOnlyConditionally",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["s3:PutObject"],
                resources=[pointer],
                conditions={**creates, "Null": {S3_IF_NONE_MATCH_KEY: "true", S3_IF_MATCH_KEY: "true"}},
            ),
        ):
            self.bucket.add_to_resource_policy(statement)

    @property
    def model_prefix_url(self) -> str:
        """`s3://<bucket>/models/`: the MME's ModelDataUrl (a prefix, trailing slash included)."""
        return self.bucket.s3_url_for_object(MODEL_PREFIX)

    @property
    def cfn_bucket(self) -> s3.CfnBucket:
        """The model bucket's L1 resource."""
        bucket = self.bucket.node.default_child
        assert isinstance(bucket, s3.CfnBucket)
        return bucket

    def model_objects_arn(self) -> str:
        return self.bucket.arn_for_objects(f"{MODEL_PREFIX}*")

    @property
    def read_arns(self) -> list[str]:
        """The archives and the manifests (everything a reader of the store may get)."""
        return [self.bucket.arn_for_objects(f"{prefix}*") for prefix in (MODEL_PREFIX, MANIFEST_PREFIX)]

    @property
    def archive_write_arns(self) -> list[str]:
        """What a build writes, each key once: archives, the content-addressed files beside the manifests
        (`labels-<hash>.json`, `tokenizer-<hash>.json`, `golden-<hash>.npz`), its candidate manifest and the
        build cache records of its archives (store.build_cache). Never a build manifest nor the live
        manifest: the serving check publishes the first, the deployment promotes the second."""
        objects = self.bucket.arn_for_objects
        suffixes = sorted({"json", *COMPANION_SUFFIXES.values()})
        return [
            objects(f"{MODEL_PREFIX}*"),
            *(objects(f"{MANIFEST_PREFIX}*-{'?' * CONTENT_HASH_LENGTH}.{suffix}") for suffix in suffixes),
            objects(f"{MANIFEST_PREFIX}{BUILDS_FOLDER}*/{CANDIDATE_PREFIX}*.json"),
            objects(f"{MANIFEST_PREFIX}{BUILD_CACHE_FOLDER}*.json"),
        ]

    @property
    def build_write_arns(self) -> list[str]:
        """What the serving check writes, once each: the report of the checked manifest, then the build
        manifest's records and index (core.manifest_index), then the build's manifest."""
        objects = self.bucket.arn_for_objects
        return [
            objects(f"{MANIFEST_PREFIX}*{SERVING_REPORT_SUFFIX}"),
            objects(f"{MANIFEST_PREFIX}*{RECORDS_SUFFIX}"),
            objects(f"{MANIFEST_PREFIX}*{INDEX_SUFFIX}"),
            objects(f"{MANIFEST_PREFIX}{BUILDS_FOLDER}*/{MANIFEST_FILE_NAME}"),
        ]

    def read_models_statements(self) -> list[iam.PolicyStatement]:
        """s3:GetObject on the archives, and s3:ListBucket on the bucket: a missing key answers 404 (rather
        than 403) only to a caller that may list the bucket (S3, GetObject: "If you have the s3:ListBucket
        permission on the bucket, Amazon S3 returns ... 404"). GetObject carries no s3:prefix, so a
        ListBucket conditioned on the model prefix would not count: the grant lists key names of this one
        bucket."""
        return [
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[self.model_objects_arn()]),
            self._list_statement(),
        ]

    def grant_read_models(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` read the archives (what SageMaker loads by TargetModel); see
        read_models_statements."""
        return self._grant(grantee, self.read_models_statements())

    def read_statements(self) -> list[iam.PolicyStatement]:
        """s3:GetObject on the archives and the manifests, and s3:ListBucket (for 404s, as above)."""
        read = iam.PolicyStatement(actions=["s3:GetObject"], resources=self.read_arns)
        return [read, self._list_statement()]

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` read the archives and the manifests (and list the bucket, for 404s)."""
        return self._grant(grantee, self.read_statements())

    def grant_publish_archives(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` (the build) write archives, content-addressed files and candidate manifests, and
        deny it the live manifest (stated although nothing allows it: a build must never move it) and the
        operators' intents."""
        return self._grant(
            grantee,
            [
                iam.PolicyStatement(
                    actions=["s3:PutObject", "s3:AbortMultipartUpload"], resources=self.archive_write_arns
                ),
                self._deny_operator_keys(),
            ],
        )

    def grant_publish_builds(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` (the serving check) write serving reports and build manifests, never the live
        manifest nor an operator's intent."""
        return self._grant(
            grantee,
            [
                iam.PolicyStatement(actions=["s3:PutObject"], resources=self.build_write_arns),
                self._deny_operator_keys(),
            ],
        )

    def grant_promote(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` replace the live manifest (the bucket policy still asks for a conditional write)."""
        return self._grant(
            grantee,
            [
                iam.PolicyStatement(
                    actions=["s3:PutObject"], resources=[self.bucket.arn_for_objects(self.live_manifest_key)]
                )
            ],
        )

    def _list_statement(self) -> iam.PolicyStatement:
        return iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn])

    def _deny_operator_keys(self) -> iam.PolicyStatement:
        """The keys only operators and the deployment write: the live manifest, and the intents of `add`,
        `upload` and `remove` (store.intents), which the runners' patterns under the manifest prefix would
        otherwise reach (IAM's `*` matches `/`: `manifests/*-????????????????.json` matches
        `manifests/intents/<model>/x-<16 characters>.json`, which the intent check counts as an intent),
        letting a runner block every operator's `add`, `upload` and `remove`."""
        return iam.PolicyStatement(
            effect=iam.Effect.DENY,
            actions=["s3:PutObject"],
            resources=[
                self.bucket.arn_for_objects(self.live_manifest_key),
                self.bucket.arn_for_objects(f"{MANIFEST_PREFIX}{INTENTS_FOLDER}*"),
            ],
        )

    @staticmethod
    def _grant(grantee: iam.IGrantable, statements: list[iam.PolicyStatement]) -> iam.Grant:
        """Each allow as a Grant on the grantee's principal policy (combined into one), each deny added
        beside them in order."""
        grant: iam.Grant | None = None
        for statement in statements:
            if statement.effect is iam.Effect.DENY:
                grantee.grant_principal.add_to_principal_policy(statement)
                continue
            added = iam.Grant.add_to_principal(
                grantee=grantee, actions=statement.actions, resource_arns=statement.resources
            )
            grant = added if grant is None else grant.combine(added)
        assert grant is not None
        return grant

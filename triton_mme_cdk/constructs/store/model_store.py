"""The model store: the bucket the endpoint loads archives from, and the grants on its key layout."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from triton_mme.core.locations import MANIFEST_PREFIX, MODEL_PREFIX
from triton_mme_cdk.constructs.scanners.checkov import skip_checks
from triton_mme_cdk.constructs.store.store_keys import (
    LIVE_MANIFEST_KEY,
    archive_write_arns,
    build_write_arns,
    conditional_write_statements,
    deny_operator_keys,
    grant,
    list_statement,
    read_arns,
)

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
    check, `grant_promote` for the deployment; the layout itself: store_keys.py). `bucket` and `cfn_bucket`
    are the escape hatches.
    """

    model_prefix = MODEL_PREFIX
    manifest_prefix = MANIFEST_PREFIX
    live_manifest_key = LIVE_MANIFEST_KEY

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
        for statement in conditional_write_statements(self.bucket):
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
        """The archives and the manifests (store_keys.read_arns)."""
        return read_arns(self.bucket)

    @property
    def archive_write_arns(self) -> list[str]:
        """What a build writes, each key once (store_keys.archive_write_arns)."""
        return archive_write_arns(self.bucket)

    @property
    def build_write_arns(self) -> list[str]:
        """What the serving check writes, once each (store_keys.build_write_arns)."""
        return build_write_arns(self.bucket)

    def read_models_statements(self) -> list[iam.PolicyStatement]:
        """s3:GetObject on the archives, and s3:ListBucket on the bucket: a missing key answers 404 (rather
        than 403) only to a caller that may list the bucket (S3, GetObject: "If you have the s3:ListBucket
        permission on the bucket, Amazon S3 returns ... 404"). GetObject carries no s3:prefix, so a
        ListBucket conditioned on the model prefix would not count: the grant lists key names of this one
        bucket."""
        return [
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[self.model_objects_arn()]),
            list_statement(self.bucket),
        ]

    def grant_read_models(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` read the archives (what SageMaker loads by TargetModel); see
        read_models_statements."""
        return grant(grantee, self.read_models_statements())

    def read_statements(self) -> list[iam.PolicyStatement]:
        """s3:GetObject on the archives and the manifests, and s3:ListBucket (for 404s, as above)."""
        read = iam.PolicyStatement(actions=["s3:GetObject"], resources=self.read_arns)
        return [read, list_statement(self.bucket)]

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` read the archives and the manifests (and list the bucket, for 404s)."""
        return grant(grantee, self.read_statements())

    def grant_publish_archives(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` (the build) write archives, content-addressed files and candidate manifests, and
        deny it the live manifest (stated although nothing allows it: a build must never move it) and the
        operators' intents."""
        writes = iam.PolicyStatement(
            actions=["s3:PutObject", "s3:AbortMultipartUpload"], resources=self.archive_write_arns
        )
        return grant(grantee, [writes, deny_operator_keys(self.bucket)])

    def grant_publish_builds(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` (the serving check) write serving reports and build manifests, never the live
        manifest nor an operator's intent."""
        writes = iam.PolicyStatement(actions=["s3:PutObject"], resources=self.build_write_arns)
        return grant(grantee, [writes, deny_operator_keys(self.bucket)])

    def grant_promote(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` replace the live manifest (the bucket policy still asks for a conditional write)."""
        live = self.bucket.arn_for_objects(self.live_manifest_key)
        return grant(grantee, [iam.PolicyStatement(actions=["s3:PutObject"], resources=[live])])

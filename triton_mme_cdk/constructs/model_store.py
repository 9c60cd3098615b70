from __future__ import annotations

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from triton_mme.core import locations
from triton_mme.core.locations import MANIFEST_PREFIX, MODEL_PREFIX
from triton_mme.core.platform import S3_IF_MATCH_KEY, S3_IF_NONE_MATCH_KEY, S3_OBJECT_CREATION_KEY

NONCURRENT_VERSION_DAYS = 30
ACCESS_LOG_DAYS = 365


class ModelStore(Construct):
    """The S3 bucket the endpoint loads archives from (`models/`) and the build stage writes to.

    Models and manifests survive stack deletion; replaced archives stay recoverable for
    NONCURRENT_VERSION_DAYS through versioning. The bucket policy makes every writer's writes conditional:
    an object is created only if its key is absent, and the live manifest is replaced only by a write that
    names the version it replaces (triton_mme/store/publish.py sends both).
    """

    model_prefix = MODEL_PREFIX
    manifest_prefix = MANIFEST_PREFIX
    live_manifest_key = locations.live_manifest_key(MANIFEST_PREFIX)

    def __init__(
        self, scope: Construct, construct_id: str, *, encryption_key: kms.IKey | None = None
    ) -> None:
        super().__init__(scope, construct_id)

        # Server access logs cannot be delivered to a KMS-encrypted bucket, so this one uses SSE-S3.
        self.access_log_bucket = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(ACCESS_LOG_DAYS))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        Validations.of(self.access_log_bucket).acknowledge(
            Acknowledgment(
                id="AwsSolutions-S1", reason="This is the access-log target; logging it would recurse."
            )
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

    def model_objects_arn(self) -> str:
        return self.bucket.arn_for_objects(f"{MODEL_PREFIX}*")

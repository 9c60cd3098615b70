"""The model store in a bare stack: a private, versioned, logged, retained bucket and its log bucket."""

from __future__ import annotations

import pytest
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template
from synth_support import KEY_ARN, bare_stack, with_nag

from infra.constructs.model_store import ModelStore

BLOCK_ALL = {
    "BlockPublicAcls": True,
    "BlockPublicPolicy": True,
    "IgnorePublicAcls": True,
    "RestrictPublicBuckets": True,
}


def store_template(*, with_key: bool = False) -> tuple[Template, ModelStore]:
    stack = bare_stack()
    key = kms.Key.from_key_arn(stack, "Key", KEY_ARN) if with_key else None
    store = ModelStore(stack, "Store", encryption_key=key)
    return with_nag(stack), store


@pytest.fixture(scope="module")
def default() -> tuple[Template, ModelStore]:
    return store_template()


def test_model_bucket_is_private_versioned_logged_expiring_old_versions_and_retained(default: tuple) -> None:
    template, _ = default
    template.has_resource(
        "AWS::S3::Bucket",
        {
            "Properties": Match.object_like(
                {
                    "BucketName": Match.absent(),
                    "PublicAccessBlockConfiguration": BLOCK_ALL,
                    "VersioningConfiguration": {"Status": "Enabled"},
                    "BucketEncryption": {
                        "ServerSideEncryptionConfiguration": [
                            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                        ]
                    },
                    "LifecycleConfiguration": {
                        "Rules": [
                            Match.object_like(
                                {
                                    "NoncurrentVersionExpiration": {"NoncurrentDays": 30},
                                    "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
                                }
                            )
                        ]
                    },
                    "LoggingConfiguration": {
                        "DestinationBucketName": {"Ref": Match.string_like_regexp("^StoreAccessLogs")},
                        "LogFilePrefix": "model-store/",
                    },
                }
            ),
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )


def test_access_log_bucket_is_private_expires_logs_after_a_year_and_is_retained(default: tuple) -> None:
    template, _ = default
    template.has_resource(
        "AWS::S3::Bucket",
        {
            "Properties": Match.object_like(
                {
                    "PublicAccessBlockConfiguration": BLOCK_ALL,
                    "LifecycleConfiguration": {"Rules": [Match.object_like({"ExpirationInDays": 365})]},
                    "LoggingConfiguration": Match.absent(),
                }
            ),
            "DeletionPolicy": "Retain",
        },
    )


@pytest.mark.parametrize("bucket", ["StoreBucket", "StoreAccessLogs"])
def test_both_buckets_deny_requests_without_tls(default: tuple, bucket: str) -> None:
    default[0].has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": Match.string_like_regexp(f"^{bucket}")},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Action": "s3:*",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            },
        },
    )


def test_a_key_encrypts_the_model_bucket_with_bucket_keys() -> None:
    template, _ = store_template(with_key=True)
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {
                        "BucketKeyEnabled": True,
                        "ServerSideEncryptionByDefault": {
                            "KMSMasterKeyID": KEY_ARN,
                            "SSEAlgorithm": "aws:kms",
                        },
                    }
                ]
            },
            "VersioningConfiguration": {"Status": "Enabled"},
        },
    )


def test_store_exposes_its_prefixes_and_the_model_prefix_url(default: tuple) -> None:
    _, store = default
    assert (store.model_prefix, store.manifest_prefix) == ("models/", "manifests/")
    resolved = store.bucket.stack.resolve(store.model_prefix_url)
    assert resolved["Fn::Join"][1][0] == "s3://" and resolved["Fn::Join"][1][-1] == "/models/"

"""The model store in a bare stack: a private, versioned, logged, retained bucket and its log bucket."""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template
from synth_support import KEY_ARN, bare_stack, template_logical_id, with_nag

from triton_mme_cdk.constructs.store.model_store import (
    ACCESS_LOG_DAYS,
    NONCURRENT_VERSION_DAYS,
    ModelStore,
    ModelStoreProps,
)

BLOCK_ALL = {
    "BlockPublicAcls": True,
    "BlockPublicPolicy": True,
    "IgnorePublicAcls": True,
    "RestrictPublicBuckets": True,
}


def store_template(*, with_key: bool = False) -> tuple[Template, ModelStore]:
    stack = bare_stack()
    key = kms.Key.from_key_arn(stack, "Key", KEY_ARN) if with_key else None
    store = ModelStore(stack, "Store", ModelStoreProps(encryption_key=key))
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


def test_access_logs_are_versioned_and_a_deleted_log_stays_recoverable(default: tuple) -> None:
    """checkov's CKV_AWS_21 fixed: a log object deleted or overwritten is kept as a noncurrent version for
    NONCURRENT_VERSION_DAYS, as the models are; CKV_AWS_18 (its own access logging) is skipped with its
    reason, as it is the target of the model bucket's logs."""
    template, store = default
    bucket = template.to_json()["Resources"][template_logical_id(store.access_log_bucket)]
    assert bucket["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = bucket["Properties"]["LifecycleConfiguration"]["Rules"]
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": NONCURRENT_VERSION_DAYS}
    assert rule["ExpirationInDays"] == ACCESS_LOG_DAYS
    (skip,) = bucket["Metadata"]["checkov"]["skip"]
    assert skip["id"] == "CKV_AWS_18" and "target of the model bucket's access logs" in skip["comment"]


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


# ----- every writer's writes are conditional --------------------------------------------------------------

CREATES = {"Bool": {"s3:ObjectCreationOperation": "true"}}


def test_objects_other_than_the_live_manifest_are_created_only_if_absent(default: tuple) -> None:
    default[0].has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": Match.string_like_regexp("^StoreBucket")},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        {
                            "Sid": "CreateObjectsOnlyIfAbsent",
                            "Effect": "Deny",
                            "Principal": {"AWS": "*"},
                            "Action": "s3:PutObject",
                            "NotResource": live_manifest_arn(),
                            "Condition": {**CREATES, "Null": {"s3:if-none-match": "true"}},
                        },
                        {
                            "Sid": "ReplaceTheLiveManifestOnlyConditionally",
                            "Effect": "Deny",
                            "Principal": {"AWS": "*"},
                            "Action": "s3:PutObject",
                            "Resource": live_manifest_arn(),
                            "Condition": {
                                **CREATES,
                                "Null": {"s3:if-none-match": "true", "s3:if-match": "true"},
                            },
                        },
                    ]
                )
            },
        },
    )


def live_manifest_arn() -> dict[str, Any]:
    return {
        "Fn::Join": [
            "",
            [{"Fn::GetAtt": [Match.string_like_regexp("^StoreBucket"), "Arn"]}, "/manifests/manifest.json"],
        ]
    }


def denied(statements: list[dict[str, Any]], key: str, operation: str, headers: set[str]) -> bool:
    """Whether one of the Deny statements refuses this write, read the way IAM reads these conditions:
    Null is true when the request lacks the header, and s3:ObjectCreationOperation is true for the calls that
    create an object (PutObject, CompleteMultipartUpload), false for CreateMultipartUpload and UploadPart."""
    present = {"s3:if-none-match": "If-None-Match" in headers, "s3:if-match": "If-Match" in headers}
    creates = operation in ("PutObject", "CompleteMultipartUpload")
    for statement in statements:
        if statement["Effect"] != "Deny" or statement["Action"] != "s3:PutObject":
            continue
        pattern = "/" + statement.get("Resource", statement.get("NotResource"))["Fn::Join"][1][-1].lstrip("/")
        matches = fnmatch.fnmatchcase("/" + key, pattern) != ("NotResource" in statement)
        nulls = statement["Condition"].get("Null", {})
        conditions = all((not present[k]) == (v == "true") for k, v in nulls.items())
        conditions &= statement["Condition"]["Bool"]["s3:ObjectCreationOperation"] == str(creates).lower()
        if matches and conditions:
            return True
    return False


@pytest.mark.parametrize(
    ("key", "operation", "headers", "refused"),
    [
        ("models/resnet50-onnx-0123456789abcdef.tar.gz", "PutObject", set(), True),
        ("models/resnet50-onnx-0123456789abcdef.tar.gz", "PutObject", {"If-None-Match"}, False),
        ("models/big-onnx-0123456789abcdef.tar.gz", "CreateMultipartUpload", set(), False),
        ("models/big-onnx-0123456789abcdef.tar.gz", "UploadPart", set(), False),
        ("models/big-onnx-0123456789abcdef.tar.gz", "CompleteMultipartUpload", set(), True),
        ("models/big-onnx-0123456789abcdef.tar.gz", "CompleteMultipartUpload", {"If-None-Match"}, False),
        ("models/resnet50-onnx-0123456789abcdef.tar.gz", "PutObject", {"If-Match"}, True),  # no overwrite
        (f"manifests/builds/{'a' * 64}/manifest.json", "PutObject", set(), True),
        ("manifests/labels-0123456789abcdef.json", "PutObject", {"If-None-Match"}, False),
        ("manifests/manifest.json", "PutObject", set(), True),
        ("manifests/manifest.json", "PutObject", {"If-Match"}, False),
        ("manifests/manifest.json", "PutObject", {"If-None-Match"}, False),
    ],
)
def test_the_bucket_policy_refuses_exactly_the_unconditional_writes(
    default: tuple, key: str, operation: str, headers: set[str], refused: bool
) -> None:
    (policy,) = [
        p
        for p in default[0].find_resources("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"]["Ref"].startswith("StoreBucket")
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert denied(statements, key, operation, headers) is refused


def test_the_store_names_its_live_manifest(default: tuple) -> None:
    assert default[1].live_manifest_key == "manifests/manifest.json"


def test_the_store_grants_follow_its_key_layout() -> None:
    stack = bare_stack()
    store = ModelStore(stack, "Store")
    roles = {
        name: iam.Role(stack, name, assumed_by=iam.AccountRootPrincipal())
        for name in ("Models", "All", "Live")
    }
    store.grant_read_models(roles["Models"])
    store.grant_read(roles["All"])
    store.grant_promote(roles["Live"])
    template = Template.from_stack(stack)
    bucket = {"Fn::GetAtt": [stack.get_logical_id(store.cfn_bucket), "Arn"]}

    def objects(key: str) -> dict[str, Any]:
        return {"Fn::Join": ["", [bucket, f"/{key}"]]}

    def policy_of(role: str) -> list[dict[str, Any]]:
        role_ref = {"Ref": stack.get_logical_id(roles[role].node.default_child)}  # type: ignore[arg-type]
        (policy,) = [
            p
            for p in template.find_resources("AWS::IAM::Policy").values()
            if p["Properties"]["Roles"] == [role_ref]
        ]
        return policy["Properties"]["PolicyDocument"]["Statement"]

    list_bucket = {"Action": "s3:ListBucket", "Effect": "Allow", "Resource": bucket}
    assert policy_of("Models") == [
        {"Action": "s3:GetObject", "Effect": "Allow", "Resource": objects("models/*")},
        list_bucket,
    ]
    reads = policy_of("All")
    assert reads[1] == list_bucket and reads[0]["Action"] == "s3:GetObject"
    assert sorted(map(str, reads[0]["Resource"])) == sorted(
        map(str, [objects("models/*"), objects("manifests/*")])
    )
    assert policy_of("Live") == [
        {"Action": "s3:PutObject", "Effect": "Allow", "Resource": objects(store.live_manifest_key)}
    ]


def _runner_policies() -> dict[str, list[dict[str, Any]]]:
    stack = bare_stack()
    store = ModelStore(stack, "Store")
    roles = {
        name: iam.Role(stack, name, assumed_by=iam.AccountRootPrincipal()) for name in ("Build", "Check")
    }
    store.grant_publish_archives(roles["Build"])
    store.grant_publish_builds(roles["Check"])
    template = Template.from_stack(stack)
    policies: dict[str, list[dict[str, Any]]] = {}
    for name, role in roles.items():
        role_ref = {"Ref": stack.get_logical_id(role.node.default_child)}  # type: ignore[arg-type]
        policies[name] = [
            statement
            for p in template.find_resources("AWS::IAM::Policy").values()
            if p["Properties"]["Roles"] == [role_ref]
            for statement in p["Properties"]["PolicyDocument"]["Statement"]
        ]
    return policies


def _keys_of(statement: dict[str, Any]) -> list[str]:
    resources = statement["Resource"]
    return [
        r["Fn::Join"][1][-1].lstrip("/") for r in (resources if isinstance(resources, list) else [resources])
    ]


def may_write(statements: list[dict[str, Any]], key: str) -> bool:
    """IAM's evaluation of PutObject on `key`: an explicit Deny wins, then any Allow (`*` and `?` match any
    characters, `/` included, as fnmatch's do)."""
    puts = [
        s
        for s in statements
        if "s3:PutObject" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]
    if any(s["Effect"] == "Deny" and any(fnmatch.fnmatchcase(key, k) for k in _keys_of(s)) for s in puts):
        return False
    return any(s["Effect"] == "Allow" and any(fnmatch.fnmatchcase(key, k) for k in _keys_of(s)) for s in puts)


@pytest.mark.parametrize("role", ["Build", "Check"])
@pytest.mark.parametrize(
    "key",
    [
        "manifests/intents/m-onnx-0123456789abcdef.tar.gz/add-0123456789abcdef.json",
        "manifests/intents/m/x-0123456789abcdef.json",
        "manifests/intents/m/x.serving-report.json",
        "manifests/intents/m/x.index.json",
        "manifests/manifest.json",
    ],
)
def test_no_runner_may_write_an_operators_key(role: str, key: str) -> None:
    assert not may_write(_runner_policies()[role], key)


@pytest.mark.parametrize(
    ("role", "key"),
    [
        ("Build", "manifests/labels-0123456789abcdef.json"),
        ("Build", "models/m-onnx-0123456789abcdef.tar.gz"),
        ("Build", "manifests/build-cache/" + "a" * 64 + ".json"),
        ("Check", f"manifests/builds/{'a' * 64}/manifest.json"),
        ("Check", "manifests/" + "a" * 64 + ".serving-report.json"),
        ("Check", "manifests/" + "a" * 64 + ".index.json"),
        ("Check", "manifests/" + "a" * 64 + ".records.jsonl"),
    ],
)
def test_each_runner_still_writes_its_own_keys(role: str, key: str) -> None:
    assert may_write(_runner_policies()[role], key)

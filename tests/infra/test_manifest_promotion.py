"""The live manifest follows the endpoint: the promotion's handlers on moto S3 and a stubbed SageMaker, walked
through create, update, a failed update and its rollback, and delete; then the construct in a bare stack."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Match, Template
from botocore.stub import Stubber
from store_support import BUCKET, write_build
from synth_support import LOG_WRITE_ACTIONS, bare_stack, checkov_skips, function_logging, with_nag

from triton_mme.core.locations import CANDIDATE_PREFIX, SERVING_REPORT_SUFFIX, serving_report_key
from triton_mme.core.manifest import Manifest
from triton_mme.core.serving_report import ArchiveServing, ServingReport
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import publish_build_manifest, read_published_manifest, upload_build
from triton_mme_cdk.constructs.manifest_promotion import ManifestPromotion
from triton_mme_cdk.constructs.manifest_promotion_handler import handler as promotion
from triton_mme_cdk.constructs.model_store import ModelStore

pytestmark = pytest.mark.usefixtures("fake_archives")

ENDPOINT = "Endpoint-AbC123"
LIVE = "manifests/manifest.json"
FIRST, SECOND, THIRD = "1" * 64, "2" * 64, "3" * 64
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def sagemaker(s3: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    client = boto3.client(
        "sagemaker", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    monkeypatch.setattr(promotion, "_clients", {"s3": s3, "sagemaker": client})
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def published_build(
    s3: Any, tmp_path: Path, fingerprint: str, archive: bytes, *, checked: bool = True
) -> Manifest:
    """A build as the stages leave it: archives uploaded, with `checked` its passing serving report, its
    manifest under its fingerprint, none live."""
    directory = tmp_path / fingerprint[:8]
    manifest = write_build(directory, {f"resnet-onnx-{fingerprint[:16]}.tar.gz": archive})
    store = ModelStoreClient(s3, BUCKET)
    upload_build(store, directory, make_live=False)
    if checked:
        archives = tuple(
            ArchiveServing(target_model=r.target_model, name=r.name, format=r.format, passed=True)
            for r in manifest.archives
        )
        report = ServingReport(manifest_sha256=manifest.sha256, server="test", archives=archives)
        s3.put_object(Bucket=BUCKET, Key=serving_report_key(manifest.sha256), Body=report.to_json().encode())
    publish_build_manifest(store, manifest, fingerprint)
    return manifest


def test_a_forged_success_cannot_make_an_unchecked_archive_live(
    s3: Any, sagemaker: Stubber, tmp_path: Path
) -> None:
    # The wait condition signalled SUCCESS by someone who read the handle's URL, before (or without) the
    # serving check: the build manifest has no passing report, so the promotion refuses and nothing moves.
    published_build(s3, tmp_path, FIRST, b"unchecked", checked=False)
    endpoint_is(sagemaker, "InService", "config-1")
    with pytest.raises(promotion.PromotionRefused, match=r"1 archive\(s\) without a passing serving report"):
        promotion.is_complete(request("Create", props(FIRST, "config-1")))
    assert live(s3) is None
    # A report that failed the archive is no better.
    manifest = published_build(s3, tmp_path / "again", SECOND, b"failed", checked=False)
    (record,) = manifest.archives
    failed = ArchiveServing(target_model=record.target_model, name=record.name, format=record.format,
                            passed=False, error="Triton did not load it")  # fmt: skip
    report = ServingReport(manifest_sha256=manifest.sha256, server="test", archives=(failed,))
    s3.put_object(Bucket=BUCKET, Key=serving_report_key(manifest.sha256), Body=report.to_json().encode())
    endpoint_is(sagemaker, "InService", "config-2")
    with pytest.raises(promotion.PromotionRefused, match="without a passing serving report"):
        promotion.is_complete(request("Create", props(SECOND, "config-2")))
    assert live(s3) is None
    assert (promotion.CANDIDATE_PREFIX, promotion.REPORT_SUFFIX) == (CANDIDATE_PREFIX, SERVING_REPORT_SUFFIX)


def props(fingerprint: str, config: str) -> dict[str, str]:
    return {
        "ServiceToken": "arn",
        "Bucket": BUCKET,
        "ModelPrefix": "models/",
        "ManifestPrefix": "manifests/",
        "Fingerprint": fingerprint,
        "BuildManifestKey": f"manifests/builds/{fingerprint}/manifest.json",
        "LiveManifestKey": LIVE,
        "EndpointName": ENDPOINT,
        "EndpointConfigName": config,
    }


def endpoint_is(stubber: Stubber, status: str, config: str, reason: str | None = None) -> None:
    answer: dict[str, Any] = {
        "EndpointName": ENDPOINT,
        "EndpointArn": f"arn:aws:sagemaker:us-east-1:123456789012:endpoint/{ENDPOINT.lower()}",
        "EndpointConfigName": config,
        "EndpointStatus": status,
        "CreationTime": NOW,
        "LastModifiedTime": NOW,
    }
    if reason:
        answer["FailureReason"] = reason
    stubber.add_response("describe_endpoint", answer, {"EndpointName": ENDPOINT})


def request(
    kind: str,
    properties: dict[str, str],
    *,
    old: dict[str, str] | None = None,
    physical_id: str | None = None,
) -> dict[str, Any]:
    """What the provider framework gives is-complete: the request merged with on-event's answer."""
    event: dict[str, Any] = {"RequestType": kind, "ResourceProperties": properties}
    if old is not None:
        event["OldResourceProperties"] = old
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    return {**event, **promotion.on_event(event)}


def live(s3: Any) -> Manifest | None:
    return read_published_manifest(ModelStoreClient(s3, BUCKET))


def test_create_update_failed_update_rollback_and_delete(s3: Any, sagemaker: Stubber, tmp_path: Path) -> None:
    first = published_build(s3, tmp_path, FIRST, b"first model")
    second = published_build(s3, tmp_path, SECOND, b"second model")
    published_build(s3, tmp_path, THIRD, b"third model")

    # Create: the endpoint is still settling, then serves the first config; the first build goes live.
    create = request("Create", props(FIRST, "config-1"))
    physical_id = create["PhysicalResourceId"]
    assert physical_id == f"s3://{BUCKET}/{LIVE}"
    endpoint_is(sagemaker, "Creating", "config-1")
    assert promotion.is_complete(create) == {"IsComplete": False}
    endpoint_is(sagemaker, "InService", "config-1")
    assert promotion.is_complete(create)["IsComplete"] is True
    assert live(s3) == first

    # Update: a new build and endpoint config; a scaling activity keeps the endpoint Updating for a while.
    update = request(
        "Update", props(SECOND, "config-2"), old=props(FIRST, "config-1"), physical_id=physical_id
    )
    assert update["PhysicalResourceId"] == physical_id
    endpoint_is(sagemaker, "Updating", "config-2")
    assert promotion.is_complete(update) == {"IsComplete": False}
    endpoint_is(sagemaker, "InService", "config-2")
    assert promotion.is_complete(update)["IsComplete"] is True
    assert live(s3) == second

    # A failed update: SageMaker rolled the third config back (an alarm fired) and answers InService on the
    # second one. The promotion fails, so the deployment fails, and nothing moves.
    failed = request(
        "Update", props(THIRD, "config-3"), old=props(SECOND, "config-2"), physical_id=physical_id
    )
    endpoint_is(sagemaker, "InService", "config-2", reason="Alarm TritonMultiModelEndpoint-Errors5xx fired")
    with pytest.raises(promotion.PromotionRefused) as refused:
        promotion.is_complete(failed)
    assert str(refused.value) == (
        f"endpoint {ENDPOINT} is InService on endpoint config config-2, not on config-3, which this "
        f"deployment created (Alarm TritonMultiModelEndpoint-Errors5xx fired); the live manifest "
        f"s3://{BUCKET}/{LIVE} stays as it was"
    )
    assert live(s3) == second

    # CloudFormation's rollback: an Update back to the previous properties, checked against the old config.
    rollback = request(
        "Update", props(SECOND, "config-2"), old=props(THIRD, "config-3"), physical_id=physical_id
    )
    assert rollback["PhysicalResourceId"] == physical_id
    endpoint_is(sagemaker, "InService", "config-2")
    outcome = promotion.is_complete(rollback)
    assert outcome == {
        "IsComplete": True,
        "Data": {"Outcome": f"already manifests/builds/{SECOND}/manifest.json"},
    }
    assert live(s3) == second

    # Delete: the store outlives the stack, and so does the live manifest.
    delete = request("Delete", props(SECOND, "config-2"), physical_id=physical_id)
    assert delete["PhysicalResourceId"] == physical_id
    assert promotion.is_complete(delete) == {"IsComplete": True}
    assert live(s3) == second


def test_a_rollback_after_a_successful_promotion_promotes_the_previous_build_back(
    s3: Any, sagemaker: Stubber, tmp_path: Path
) -> None:
    first = published_build(s3, tmp_path, FIRST, b"first model")
    second = published_build(s3, tmp_path, SECOND, b"second model")
    endpoint_is(sagemaker, "InService", "config-1")
    promotion.is_complete(request("Create", props(FIRST, "config-1")))
    endpoint_is(sagemaker, "InService", "config-2")
    promotion.is_complete(
        request("Update", props(SECOND, "config-2"), old=props(FIRST, "config-1"), physical_id="p")
    )
    assert live(s3) == second

    # A resource after the promotion failed: CloudFormation puts the endpoint back on config-1, then this.
    endpoint_is(sagemaker, "InService", "config-1")
    back = promotion.is_complete(
        request("Update", props(FIRST, "config-1"), old=props(SECOND, "config-2"), physical_id="p")
    )

    assert back["Data"] == {"Outcome": f"promoted manifests/builds/{FIRST}/manifest.json"}
    assert live(s3) == first


def test_the_live_manifest_is_the_build_manifest_byte_for_byte(
    s3: Any, sagemaker: Stubber, tmp_path: Path
) -> None:
    published_build(s3, tmp_path, FIRST, b"first model")
    endpoint_is(sagemaker, "InService", "config-1")
    promotion.is_complete(request("Create", props(FIRST, "config-1")))

    source = s3.get_object(Bucket=BUCKET, Key=f"manifests/builds/{FIRST}/manifest.json")["Body"].read()
    pointer = s3.get_object(Bucket=BUCKET, Key=LIVE)
    assert pointer["Body"].read() == source
    # The same sha256 metadata the store writes, so `upload` and `add` compare it the same way.
    assert pointer["Metadata"]["sha256"] == Manifest.from_json(source.decode()).sha256


@pytest.mark.parametrize("status", ["Failed", "OutOfService", "UpdateRollbackFailed", "Deleting"])
def test_an_endpoint_that_does_not_serve_fails_the_promotion(
    s3: Any, sagemaker: Stubber, tmp_path: Path, status: str
) -> None:
    published_build(s3, tmp_path, FIRST, b"first model")
    endpoint_is(sagemaker, status, "config-1")

    with pytest.raises(promotion.PromotionRefused, match=f"is {status} on endpoint config config-1"):
        promotion.is_complete(request("Create", props(FIRST, "config-1")))
    assert live(s3) is None


def test_a_missing_build_manifest_or_archive_moves_nothing(
    s3: Any, sagemaker: Stubber, tmp_path: Path
) -> None:
    endpoint_is(sagemaker, "InService", "config-1")
    with pytest.raises(
        promotion.PromotionRefused, match=f"no build manifest at s3://{BUCKET}/manifests/builds/"
    ):
        promotion.is_complete(request("Create", props(FIRST, "config-1")))

    manifest = published_build(s3, tmp_path, SECOND, b"second model")
    (archive,) = manifest.target_models
    s3.delete_object(Bucket=BUCKET, Key=f"models/{archive}")  # removed behind the deployment's back
    endpoint_is(sagemaker, "InService", "config-1")
    with pytest.raises(
        promotion.PromotionRefused, match=f"names s3://{BUCKET}/models/{archive}, which is not"
    ):
        promotion.is_complete(request("Create", props(SECOND, "config-1")))
    assert live(s3) is None


class ChangedMeanwhile:
    """An S3 client on which someone else replaces the live manifest right after each read of it."""

    def __init__(self, client: Any, times: int) -> None:
        self._client, self._times = client, times
        self.writes: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def get_object(self, **kwargs: Any) -> Any:
        response = self._client.get_object(**kwargs)
        if kwargs["Key"] == LIVE and self._times:
            self._times -= 1
            body = f'{{"archives": [], "by": "another writer, {self._times}"}}'.encode()
            self._client.put_object(Bucket=BUCKET, Key=LIVE, Body=body, IfMatch=response["ETag"])
        return response

    def put_object(self, **kwargs: Any) -> Any:
        try:
            answer = self._client.put_object(**kwargs)
        except Exception as error:
            self.writes.append(type(error).__name__)
            raise
        self.writes.append(f"If-Match {kwargs['IfMatch']}" if "IfMatch" in kwargs else "If-None-Match")
        return answer


def test_the_pointer_is_replaced_only_if_it_is_still_the_version_read(
    s3: Any, sagemaker: Stubber, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = published_build(s3, tmp_path, FIRST, b"first model")
    s3.put_object(Bucket=BUCKET, Key=LIVE, Body=b'{"archives": []}')
    racing = ChangedMeanwhile(s3, times=1)
    monkeypatch.setitem(promotion._clients, "s3", racing)
    endpoint_is(sagemaker, "InService", "config-1")

    promotion.is_complete(request("Create", props(FIRST, "config-1")))

    assert [w.split(" ")[0] for w in racing.writes] == ["ClientError", "If-Match"]
    assert live(s3) == first


def test_a_pointer_that_keeps_changing_stops_the_promotion(
    s3: Any, sagemaker: Stubber, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    published_build(s3, tmp_path, FIRST, b"first model")
    s3.put_object(Bucket=BUCKET, Key=LIVE, Body=b'{"archives": []}')
    monkeypatch.setitem(promotion._clients, "s3", ChangedMeanwhile(s3, times=promotion.POINTER_ATTEMPTS))
    endpoint_is(sagemaker, "InService", "config-1")

    with pytest.raises(promotion.PromotionRefused, match=r"kept changing while it was promoted \(5 tries\)"):
        promotion.is_complete(request("Create", props(FIRST, "config-1")))


# ----- the construct ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template() -> Template:
    stack = bare_stack()
    store = ModelStore(stack, "Store")
    ManifestPromotion(
        stack,
        "Promotion",
        store=store,
        fingerprint=FIRST,
        endpoint_name="Endpoint-AbC123",
        endpoint_arn="arn:aws:sagemaker:eu-west-1:123456789012:endpoint/endpoint-abc123",
        endpoint_config_name="config-1",
        log_retention=logs.RetentionDays.ONE_MONTH,
    )
    return with_nag(stack)


def test_the_resource_names_the_build_manifest_the_live_one_and_the_endpoint(template: Template) -> None:
    template.has_resource_properties(
        "Custom::ManifestPromotion",
        {
            "Bucket": {"Ref": Match.string_like_regexp("^StoreBucket")},
            "BuildManifestKey": f"manifests/builds/{FIRST}/manifest.json",
            "LiveManifestKey": LIVE,
            "ModelPrefix": "models/",
            "ManifestPrefix": "manifests/",
            "EndpointName": "Endpoint-AbC123",
            "EndpointConfigName": "config-1",
            "ServiceTimeout": "1800",
        },
    )


def statements_of(template: Template, function: str) -> list[dict[str, Any]]:
    """A handler role's grants besides writing its own log (test_every_function_writes_only_its_own_log)."""
    found = []
    for logical_id, policy in template.find_resources("AWS::IAM::Policy").items():
        if logical_id.startswith(f"Promotion{function}"):
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return [
        s
        for s in found
        if not LOG_WRITE_ACTIONS & set(s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]


def test_only_the_is_complete_handler_may_write_and_only_the_live_manifest(template: Template) -> None:
    assert statements_of(template, "OnEvent") == []
    granted = statements_of(template, "IsComplete")
    (write,) = [s for s in granted if "s3:PutObject" in s["Action"]]
    assert write["Action"] == "s3:PutObject"
    assert write["Resource"]["Fn::Join"][1][-1] == f"/{LIVE}"
    endpoint_arn = "arn:aws:sagemaker:eu-west-1:123456789012:endpoint/endpoint-abc123"
    assert {"Action": "sagemaker:DescribeEndpoint", "Effect": "Allow", "Resource": endpoint_arn} in granted
    actions = {a for s in granted for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert actions == {"sagemaker:DescribeEndpoint", "s3:GetObject", "s3:ListBucket", "s3:PutObject"}


def test_every_function_writes_only_its_own_log(template: Template) -> None:
    """The handlers and the provider framework's three functions log to groups of their own; their roles may
    write those groups and no other (no AWSLambdaBasicExecutionRole, which allows any group)."""
    functions = function_logging(template)
    assert len(functions) == 5, sorted(functions)  # on-event, is-complete, the framework's three
    for logical_id, function in functions.items():
        assert function.managed_policies == [], logical_id
        (group_id,) = function.log_group.values()
        assert template.to_json()["Resources"][group_id]["Type"] == "AWS::Logs::LogGroup"
        assert function.writable == [{"Fn::GetAtt": [group_id, "Arn"]}], logical_id
    handler_groups = {
        functions[f].log_group["Ref"] for f in functions if not f.startswith("PromotionProvider")
    }
    assert len(handler_groups) == 2, "each handler has a group of its own"


def test_each_function_log_group_and_the_waiters_grant_says_why_checkov_may_skip_it(
    template: Template,
) -> None:
    """The provider's resources carry their checkov skips (docs/scanners.md): no VPC, dead-letter queue or
    reserved concurrency for any function, the managed key for the framework's variables, no customer key
    for the log groups, and the waiter's Step Functions logging grant on '*'."""
    functions = template.find_resources("AWS::Lambda::Function")
    for logical_id, function in functions.items():
        expected = {"CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117"}
        if "Environment" in function["Properties"]:
            expected.add("CKV_AWS_173")
        assert set(checkov_skips(template, logical_id)) == expected, logical_id
    handler_vpc = checkov_skips(template, next(f for f in functions if f.startswith("PromotionOnEvent")))
    assert "SageMaker DescribeEndpoint" in handler_vpc["CKV_AWS_117"]  # the APIs the construct names
    for logical_id in template.find_resources("AWS::Logs::LogGroup"):
        assert set(checkov_skips(template, logical_id)) == {"CKV_AWS_158"}, logical_id
    (waiter_policy,) = [p for p in template.find_resources("AWS::IAM::Policy") if "waiterstatemachine" in p]
    assert "Step Functions logging" in checkov_skips(template, waiter_policy)["CKV_AWS_111"]


def test_the_provider_polls_every_30_seconds_for_at_most_30_minutes(template: Template) -> None:
    (machine,) = template.find_resources("AWS::StepFunctions::StateMachine").values()
    definition = json.dumps(machine["Properties"]["DefinitionString"])
    assert '\\"IntervalSeconds\\":30' in definition and '\\"MaxAttempts\\":60' in definition


def test_a_fingerprint_that_is_not_one_is_refused() -> None:
    stack = bare_stack()
    with pytest.raises(
        ValueError, match="cannot promote a build: fingerprint 'latest' is not a build fingerprint"
    ):
        ManifestPromotion(
            stack,
            "Promotion",
            store=ModelStore(stack, "Store"),
            fingerprint="latest",
            endpoint_name="e",
            endpoint_arn="arn",
            endpoint_config_name="c",
            log_retention=logs.RetentionDays.ONE_MONTH,
        )


def test_the_handler_reads_the_manifest_schema_as_the_core_does(built: tuple[Path, Manifest]) -> None:
    """The handler ships alone (no pydantic): its reading of a manifest must name what the core's names."""
    _, manifest = built
    assert manifest.files, "the tiny build records companion files"
    expected = sorted(
        [f"models/{target}" for target in manifest.target_models] + [f"manifests/{f}" for f in manifest.files]
    )
    document = json.loads(manifest.to_json())
    assert promotion._named_keys(document, "models/", "manifests/") == expected

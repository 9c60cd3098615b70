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
from triton_mme_cdk.constructs.store.manifest_promotion import ManifestPromotion
from triton_mme_cdk.constructs.store.manifest_promotion_handler import handler as promotion
from triton_mme_cdk.constructs.store.model_store import ModelStore

pytestmark = pytest.mark.usefixtures("fake_archives")

ENDPOINT = "Endpoint-AbC123"
LIVE = "manifests/manifest.json"
FIRST, SECOND, THIRD = "1" * 64, "2" * 64, "3" * 64
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def clients(s3: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The promotion function's clients for this test, by service: `promotion.client` answers from it."""
    by_service = {"s3": s3}
    monkeypatch.setattr(promotion, "client", by_service.__getitem__)
    return by_service


@pytest.fixture
def sagemaker(clients: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    client = boto3.client(
        "sagemaker", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    clients["sagemaker"] = client
    monkeypatch.setattr(promotion, "SETTLED", {"Delay": 0, "MaxAttempts": 3})
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
        promotion.on_event(request("Create", props(FIRST, "config-1")))
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
        promotion.on_event(request("Create", props(SECOND, "config-2")))
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
    """What the provider framework gives the on-event handler."""
    event: dict[str, Any] = {"RequestType": kind, "ResourceProperties": properties}
    if old is not None:
        event["OldResourceProperties"] = old
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    return event


def live(s3: Any) -> Manifest | None:
    return read_published_manifest(ModelStoreClient(s3, BUCKET))


def test_create_update_failed_update_rollback_and_delete(s3: Any, sagemaker: Stubber, tmp_path: Path) -> None:
    first = published_build(s3, tmp_path, FIRST, b"first model")
    second = published_build(s3, tmp_path, SECOND, b"second model")
    published_build(s3, tmp_path, THIRD, b"third model")

    # Create: the endpoint is still settling (SageMaker's waiter reads it until InService), then serves the
    # first config; the first build goes live.
    create = request("Create", props(FIRST, "config-1"))
    for status in ("Creating", "Creating", "InService", "InService"):
        endpoint_is(sagemaker, status, "config-1")
    created = promotion.on_event(create)
    physical_id = created["PhysicalResourceId"]
    assert physical_id == f"s3://{BUCKET}/{LIVE}"
    assert created["Data"] == {"Outcome": f"promoted manifests/builds/{FIRST}/manifest.json"}
    assert live(s3) == first

    # Update: a new build and endpoint config; a scaling activity keeps the endpoint Updating for a while.
    update = request(
        "Update", props(SECOND, "config-2"), old=props(FIRST, "config-1"), physical_id=physical_id
    )
    for status in ("Updating", "InService", "InService"):
        endpoint_is(sagemaker, status, "config-2")
    assert promotion.on_event(update)["PhysicalResourceId"] == physical_id
    assert live(s3) == second

    # A failed update: SageMaker rolled the third config back (an alarm fired) and answers InService on the
    # second one. The promotion fails, so the deployment fails, and nothing moves.
    failed = request(
        "Update", props(THIRD, "config-3"), old=props(SECOND, "config-2"), physical_id=physical_id
    )
    endpoint_is(sagemaker, "InService", "config-2", reason="Alarm TritonMultiModelEndpoint-Errors5xx fired")
    with pytest.raises(promotion.PromotionRefused) as refused:
        promotion.on_event(failed)
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
    endpoint_is(sagemaker, "InService", "config-2")
    outcome = promotion.on_event(rollback)
    assert outcome == {
        "PhysicalResourceId": physical_id,
        "Data": {"Outcome": f"already manifests/builds/{SECOND}/manifest.json"},
    }
    assert live(s3) == second

    # Delete: the store outlives the stack, and so does the live manifest.
    delete = request("Delete", props(SECOND, "config-2"), physical_id=physical_id)
    assert promotion.on_event(delete) == {"PhysicalResourceId": physical_id}
    assert live(s3) == second


def test_a_rollback_after_a_successful_promotion_promotes_the_previous_build_back(
    s3: Any, sagemaker: Stubber, tmp_path: Path
) -> None:
    first = published_build(s3, tmp_path, FIRST, b"first model")
    second = published_build(s3, tmp_path, SECOND, b"second model")
    endpoint_is(sagemaker, "InService", "config-1")
    promotion.on_event(request("Create", props(FIRST, "config-1")))
    endpoint_is(sagemaker, "InService", "config-2")
    promotion.on_event(
        request("Update", props(SECOND, "config-2"), old=props(FIRST, "config-1"), physical_id="p")
    )
    assert live(s3) == second

    # A resource after the promotion failed: CloudFormation puts the endpoint back on config-1, then this.
    endpoint_is(sagemaker, "InService", "config-1")
    back = promotion.on_event(
        request("Update", props(FIRST, "config-1"), old=props(SECOND, "config-2"), physical_id="p")
    )

    assert back["Data"] == {"Outcome": f"promoted manifests/builds/{FIRST}/manifest.json"}
    assert live(s3) == first


def test_the_live_manifest_is_the_build_manifest_byte_for_byte(
    s3: Any, sagemaker: Stubber, tmp_path: Path
) -> None:
    published_build(s3, tmp_path, FIRST, b"first model")
    endpoint_is(sagemaker, "InService", "config-1")
    promotion.on_event(request("Create", props(FIRST, "config-1")))

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
        promotion.on_event(request("Create", props(FIRST, "config-1")))
    assert live(s3) is None


def test_a_missing_build_manifest_or_archive_moves_nothing(
    s3: Any, sagemaker: Stubber, tmp_path: Path
) -> None:
    endpoint_is(sagemaker, "InService", "config-1")
    with pytest.raises(
        promotion.PromotionRefused, match=f"no build manifest at s3://{BUCKET}/manifests/builds/"
    ):
        promotion.on_event(request("Create", props(FIRST, "config-1")))

    manifest = published_build(s3, tmp_path, SECOND, b"second model")
    (archive,) = manifest.target_models
    s3.delete_object(Bucket=BUCKET, Key=f"models/{archive}")  # removed behind the deployment's back
    endpoint_is(sagemaker, "InService", "config-1")
    with pytest.raises(
        promotion.PromotionRefused, match=f"names s3://{BUCKET}/models/{archive}, which is not"
    ):
        promotion.on_event(request("Create", props(SECOND, "config-1")))
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
    s3: Any, sagemaker: Stubber, tmp_path: Path, clients: dict[str, Any]
) -> None:
    first = published_build(s3, tmp_path, FIRST, b"first model")
    s3.put_object(Bucket=BUCKET, Key=LIVE, Body=b'{"archives": []}')
    racing = ChangedMeanwhile(s3, times=1)
    clients["s3"] = racing
    endpoint_is(sagemaker, "InService", "config-1")

    promotion.on_event(request("Create", props(FIRST, "config-1")))

    assert [w.split(" ")[0] for w in racing.writes] == ["ClientError", "If-Match"]
    assert live(s3) == first


def test_a_pointer_that_keeps_changing_stops_the_promotion(
    s3: Any, sagemaker: Stubber, tmp_path: Path, clients: dict[str, Any]
) -> None:
    published_build(s3, tmp_path, FIRST, b"first model")
    s3.put_object(Bucket=BUCKET, Key=LIVE, Body=b'{"archives": []}')
    clients["s3"] = ChangedMeanwhile(s3, times=promotion.POINTER_ATTEMPTS)
    endpoint_is(sagemaker, "InService", "config-1")

    with pytest.raises(promotion.PromotionRefused, match=r"kept changing while it was promoted \(5 tries\)"):
        promotion.on_event(request("Create", props(FIRST, "config-1")))


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
            "ServiceTimeout": "900",
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


def test_only_the_handler_may_write_and_only_the_live_manifest(template: Template) -> None:
    framework = statements_of(template, "Provider")  # it invokes the handler, nothing else
    actions = {a for s in framework for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert actions == {"lambda:InvokeFunction", "lambda:GetFunction"}
    granted = statements_of(template, "OnEvent")
    (write,) = [s for s in granted if "s3:PutObject" in s["Action"]]
    assert write["Action"] == "s3:PutObject"
    assert write["Resource"]["Fn::Join"][1][-1] == f"/{LIVE}"
    endpoint_arn = "arn:aws:sagemaker:eu-west-1:123456789012:endpoint/endpoint-abc123"
    assert {"Action": "sagemaker:DescribeEndpoint", "Effect": "Allow", "Resource": endpoint_arn} in granted
    actions = {a for s in granted for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert actions == {"sagemaker:DescribeEndpoint", "s3:GetObject", "s3:ListBucket", "s3:PutObject"}


def test_every_function_writes_only_its_own_log(template: Template) -> None:
    """The handler and the provider framework's on-event function log to groups of their own; their roles may
    write those groups and no other (no AWSLambdaBasicExecutionRole, which allows any group)."""
    functions = function_logging(template)
    assert len(functions) == 2, sorted(functions)  # the handler, the framework's on-event
    for logical_id, function in functions.items():
        assert function.managed_policies == [], logical_id
        (group_id,) = function.log_group.values()
        assert template.to_json()["Resources"][group_id]["Type"] == "AWS::Logs::LogGroup"
        assert function.writable == [{"Fn::GetAtt": [group_id, "Arn"]}], logical_id
    handler_groups = {
        functions[f].log_group["Ref"] for f in functions if not f.startswith("PromotionProvider")
    }
    assert len(handler_groups) == 1, "the handler has a group of its own"


def test_each_function_and_log_group_says_why_checkov_may_skip_it(template: Template) -> None:
    """The provider's resources carry their checkov skips (docs/scanners.md): no VPC, dead-letter queue or
    reserved concurrency for any function, the managed key for the framework's variables, no customer key
    for the log groups."""
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


def test_one_wait_the_endpoint_and_no_polling_provider(template: Template) -> None:
    """No is-complete handler and no waiter state machine: the promotion runs once, after the endpoint, and
    only SageMaker's waiter covers a scaling activity, within the function's timeout."""
    template.resource_count_is("AWS::StepFunctions::StateMachine", 0)
    (handler,) = [f for k, f in template.find_resources("AWS::Lambda::Function").items() if "OnEvent" in k]
    assert handler["Properties"]["Handler"] == "handler.on_event"
    settled = promotion.SETTLED["Delay"] * promotion.SETTLED["MaxAttempts"]
    assert settled + 30 < handler["Properties"]["Timeout"] < 15 * 60  # the framework function's 15 minutes


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

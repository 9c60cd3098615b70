"""Writes that cannot collide: archives are created only if absent, the live manifest is replaced only if it
is still the version read. moto 5.2.5 enforces If-None-Match on PutObject and CompleteMultipartUpload and
If-Match on PutObject; what it does not do (409 ConditionalRequestConflict, a writer that always loses) is
played with botocore's Stubber."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import boto3
import pytest
from boto3.exceptions import S3UploadFailedError
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber
from store_support import (
    ARCHIVES,
    BUCKET,
    SentHeaders,
    one_line_error,
    passing_report,
    publish_passing_report,
    write_build,
)

from triton_mme.cli import main
from triton_mme.core.locations import manifest_index_keys
from triton_mme.core.manifest import Manifest
from triton_mme.core.manifest_index import index_files
from triton_mme.store.location import ModelStoreClient, Prefixes
from triton_mme.store.operations import add_archive
from triton_mme.store.publish import (
    CREATE_ATTEMPTS,
    POINTER_ATTEMPTS,
    DifferentContentError,
    LocalObject,
    PublishError,
    create_json,
    only_if_absent,
    publish_manifest,
    publish_objects,
    read_published_manifest,
    update_live_manifest,
    upload_build,
)

pytestmark = pytest.mark.usefixtures("fake_archives")

MiB = 1024 * 1024
POINTER = "manifests/manifest.json"


def local_object(path: Path, data: bytes) -> LocalObject:
    path.write_bytes(data)
    return LocalObject(path=path, key=path.name, sha256=hashlib.sha256(data).hexdigest(), size=len(data))


# ----- archives: created only if absent ---------------------------------------------------------------


def test_a_small_archive_is_put_with_if_none_match(s3: Any, tmp_path: Path) -> None:
    sent = SentHeaders(s3)
    write_build(tmp_path, ARCHIVES)

    upload_build(ModelStoreClient(s3, BUCKET), tmp_path)

    puts = sent.of("PutObject")
    archive_puts = [h for h in puts if h.get("Content-Type") == "application/gzip"]
    assert len(archive_puts) == 2 and all(h["If-None-Match"] == "*" for h in archive_puts)
    # The live pointer is the one write that is not "create only": it goes with If-None-Match here
    # because nothing was published yet (see the pointer tests below).
    assert all("If-None-Match" in h or "If-Match" in h for h in puts)


def test_a_multipart_archive_sends_the_condition_on_complete_only(s3: Any, tmp_path: Path) -> None:
    sent = SentHeaders(s3)
    item = local_object(tmp_path / "big-onnx-0000000000000000.tar.gz", b"x" * (6 * MiB))
    config = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=1)

    uploaded, _ = publish_objects(ModelStoreClient(s3, BUCKET), "models/", [item], transfer_config=config)

    assert uploaded == ["models/big-onnx-0000000000000000.tar.gz"]
    assert sent.of("PutObject") == []
    (complete,) = sent.of("CompleteMultipartUpload")
    assert complete["If-None-Match"] == "*"
    # S3 takes no condition on these (S3 user guide, conditional writes): none is sent.
    for operation in ("CreateMultipartUpload", "UploadPart"):
        assert sent.of(operation) and not any("If-None-Match" in h for h in sent.of(operation))


def test_moto_refuses_a_second_create_of_a_multipart_key(s3: Any, tmp_path: Path) -> None:
    """The condition is real: with the check-before-upload skipped, S3 (moto) refuses the completion."""
    item = local_object(tmp_path / "big-onnx-0000000000000000.tar.gz", b"y" * (6 * MiB))
    config = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=1)
    s3.put_object(Bucket=BUCKET, Key="models/big-onnx-0000000000000000.tar.gz", Body=b"first writer")
    with (
        pytest.raises(S3UploadFailedError, match="PreconditionFailed"),
        only_if_absent(ModelStoreClient(s3, BUCKET), "models/big-onnx-0000000000000000.tar.gz"),
    ):
        s3.upload_file(str(item.path), BUCKET, "models/big-onnx-0000000000000000.tar.gz", Config=config)
    body = s3.get_object(Bucket=BUCKET, Key="models/big-onnx-0000000000000000.tar.gz")["Body"].read()
    assert body == b"first writer"


def test_the_condition_applies_to_that_key_only_and_only_during_the_transfer(s3: Any, tmp_path: Path) -> None:
    sent = SentHeaders(s3)
    item = local_object(tmp_path / "a-onnx-0000000000000000.tar.gz", b"a")

    publish_objects(ModelStoreClient(s3, BUCKET), "models/", [item])
    s3.put_object(Bucket=BUCKET, Key="models/other", Body=b"b")

    assert [h.get("If-None-Match") for h in sent.of("PutObject")] == ["*", None]


class RacedS3:
    """A client on which another writer creates `key` with `data` just before our upload starts."""

    def __init__(self, client: Any, key: str, data: bytes) -> None:
        self._client, self._key, self._data = client, key, data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def upload_file(self, *args: Any, **kwargs: Any) -> Any:
        self._client.put_object(Bucket=BUCKET, Key=self._key, Body=self._data)
        return self._client.upload_file(*args, **kwargs)


def test_an_archive_created_meanwhile_with_the_same_bytes_counts_as_skipped(s3: Any, tmp_path: Path) -> None:
    item = local_object(tmp_path / "a-onnx-0000000000000000.tar.gz", b"same bytes")

    uploaded, skipped = publish_objects(
        ModelStoreClient(RacedS3(s3, "models/a-onnx-0000000000000000.tar.gz", b"same bytes"), BUCKET),
        "models/",
        [item],
    )

    assert (uploaded, skipped) == ([], ["models/a-onnx-0000000000000000.tar.gz"])


def test_an_archive_created_meanwhile_with_other_bytes_is_never_overwritten(s3: Any, tmp_path: Path) -> None:
    item = local_object(tmp_path / "a-onnx-0000000000000000.tar.gz", b"ours")

    with pytest.raises(DifferentContentError, match="already exists with different content"):
        publish_objects(
            ModelStoreClient(RacedS3(s3, "models/a-onnx-0000000000000000.tar.gz", b"theirs"), BUCKET),
            "models/",
            [item],
        )

    assert (
        s3.get_object(Bucket=BUCKET, Key="models/a-onnx-0000000000000000.tar.gz")["Body"].read() == b"theirs"
    )


class FailingUploadS3:
    """Every upload fails the way boto3 reports S3's answer `code` (S3Transfer.upload_file wraps it)."""

    def __init__(self, client: Any, code: str, failures: int) -> None:
        self._client, self._code, self._failures = client, code, failures
        self.attempts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def upload_file(self, filename: str, bucket: str, key: str, **kwargs: Any) -> Any:
        self.attempts += 1
        if self.attempts <= self._failures:
            try:
                raise ClientError({"Error": {"Code": self._code, "Message": "no"}}, "CompleteMultipartUpload")
            except ClientError as error:
                raise S3UploadFailedError(f"Failed to upload {filename}: {error}")  # noqa: B904
        return self._client.upload_file(filename, bucket, key, **kwargs)


def test_a_409_conflict_uploads_the_archive_again(s3: Any, tmp_path: Path) -> None:
    client = FailingUploadS3(s3, "ConditionalRequestConflict", failures=1)
    item = local_object(tmp_path / "a-onnx-0000000000000000.tar.gz", b"payload")

    uploaded, _ = publish_objects(ModelStoreClient(client, BUCKET), "models/", [item])

    assert uploaded == ["models/a-onnx-0000000000000000.tar.gz"] and client.attempts == 2


def test_conflicts_are_retried_a_bounded_number_of_times(s3: Any, tmp_path: Path) -> None:
    client = FailingUploadS3(s3, "ConditionalRequestConflict", failures=10)
    item = local_object(tmp_path / "a-onnx-0000000000000000.tar.gz", b"payload")

    with pytest.raises(PublishError, match=rf"another writer kept writing the same key \({CREATE_ATTEMPTS} "):
        publish_objects(ModelStoreClient(client, BUCKET), "models/", [item])
    assert client.attempts == CREATE_ATTEMPTS


def test_other_upload_errors_are_not_retried(s3: Any, tmp_path: Path) -> None:
    client = FailingUploadS3(s3, "AccessDenied", failures=10)
    item = local_object(tmp_path / "a-onnx-0000000000000000.tar.gz", b"payload")

    with pytest.raises(S3UploadFailedError, match="AccessDenied"):
        publish_objects(ModelStoreClient(client, BUCKET), "models/", [item])
    assert client.attempts == 1


# ----- files written once ------------------------------------------------------------------------------


def stubbed_s3() -> tuple[Any, Stubber]:
    client = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return client, Stubber(client)


def test_create_json_retries_a_409_then_writes_with_if_none_match() -> None:
    client, stubber = stubbed_s3()
    expected = {
        "Bucket": BUCKET,
        "Key": "manifests/x.json",
        "Body": b"{}",
        "ContentType": "application/json",
        "Metadata": ANY,
        "ChecksumAlgorithm": "SHA256",
        "IfNoneMatch": "*",
    }
    for _ in range(2):
        stubber.add_client_error("head_object", "404", http_status_code=404)
        if _ == 0:
            stubber.add_client_error(
                "put_object", "ConditionalRequestConflict", http_status_code=409, expected_params=expected
            )
        else:
            stubber.add_response("put_object", {"ETag": '"e"'}, expected)
    with stubber:
        assert create_json(ModelStoreClient(client, BUCKET), "manifests/x.json", b"{}") is True
        stubber.assert_no_pending_responses()


# ----- the live pointer: replaced only if it is still the version read -----------------------------------


def test_the_first_pointer_is_created_with_if_none_match_and_replaced_with_if_match(
    s3: Any, tmp_path: Path
) -> None:
    sent = SentHeaders(s3)
    write_build(tmp_path / "one", ARCHIVES)
    write_build(tmp_path / "two", {"resnet-onnx-cccccccccccccccc.tar.gz": b"newer"})

    upload_build(ModelStoreClient(s3, BUCKET), tmp_path / "one")
    etag = s3.head_object(Bucket=BUCKET, Key=POINTER)["ETag"]
    upload_build(ModelStoreClient(s3, BUCKET), tmp_path / "two")

    pointer_puts = [h for h in sent.of("PutObject") if "If-Match" in h or h.get("If-None-Match") == "*"]
    conditions = [(h.get("If-Match"), h.get("If-None-Match")) for h in pointer_puts[-2:]]
    # The last two conditional writes of the second upload: its immutable copy, then the pointer.
    assert conditions == [(None, "*"), (etag, None)]
    current = read_published_manifest(ModelStoreClient(s3, BUCKET))
    assert current is not None and current.target_models == {"resnet-onnx-cccccccccccccccc.tar.gz"}


def test_moto_refuses_a_pointer_write_with_a_stale_etag(s3: Any) -> None:
    first = s3.put_object(Bucket=BUCKET, Key=POINTER, Body=b"{}", IfNoneMatch="*")
    s3.put_object(Bucket=BUCKET, Key=POINTER, Body=b'{"a": 1}', IfMatch=first["ETag"])

    with pytest.raises(ClientError, match="PreconditionFailed"):
        s3.put_object(Bucket=BUCKET, Key=POINTER, Body=b'{"b": 2}', IfMatch=first["ETag"])
    with pytest.raises(ClientError, match="PreconditionFailed"):
        s3.put_object(Bucket=BUCKET, Key=POINTER, Body=b"{}", IfNoneMatch="*")


class InterleavedS3:
    """Runs `meanwhile` after the reader's last read of the live pointer, right before it writes it back:
    the interleaving of two `add`s that lost one of them before pointers were written conditionally. (`add`
    reads the pointer more than once, so the other writer runs at the write, not at the first read.)"""

    def __init__(self, client: Any, meanwhile: Any) -> None:
        self._client, self._meanwhile = client, meanwhile
        self.pointer_writes: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def put_object(self, **kwargs: Any) -> Any:
        if kwargs["Key"] == POINTER:
            if self._meanwhile is not None:
                meanwhile, self._meanwhile = self._meanwhile, None
                meanwhile()  # the reader's ETag is now stale
            try:
                response = self._client.put_object(**kwargs)
            except ClientError as error:
                self.pointer_writes.append(error.response["Error"]["Code"])
                raise
            self.pointer_writes.append("written")
            return response
        return self._client.put_object(**kwargs)


def test_two_interleaved_adds_keep_both_entries(s3: Any, built: tuple[Path, Manifest]) -> None:
    out, manifest = built
    onnx, text = manifest.find("tiny-cnn", "onnx"), manifest.find("tiny-roberta", "onnx")
    prefixes = Prefixes.of()
    # Something is live already, so both writers start from the same ETag.
    add_archive(
        ModelStoreClient(s3, BUCKET, prefixes),
        out / manifest.find("tiny-cnn", "torchscript").target_model,
        name="base",
    )

    def second_writer() -> None:
        add_archive(ModelStoreClient(s3, BUCKET, prefixes), out / text.target_model, name="text")

    first = InterleavedS3(s3, second_writer)
    add_archive(ModelStoreClient(first, BUCKET, prefixes), out / onnx.target_model, name="vision")

    published = read_published_manifest(ModelStoreClient(s3, BUCKET))
    assert published is not None
    assert {(r.name, r.target_model) for r in published.archives} == {
        ("base", manifest.find("tiny-cnn", "torchscript").target_model),
        ("text", text.target_model),
        ("vision", onnx.target_model),
    }
    # The first writer's write on its stale read was refused, then it re-read and kept the second's entry.
    assert first.pointer_writes == ["PreconditionFailed", "written"]


def test_interleaved_first_publications_do_not_overwrite_each_other(s3: Any, tmp_path: Path) -> None:
    write_build(tmp_path / "one", {"one-onnx-aaaaaaaaaaaaaaaa.tar.gz": b"one"})
    write_build(tmp_path / "two", {"two-onnx-bbbbbbbbbbbbbbbb.tar.gz": b"two"})
    upload_build(ModelStoreClient(s3, BUCKET), tmp_path / "one", make_live=False)

    def second_writer() -> None:
        upload_build(ModelStoreClient(s3, BUCKET), tmp_path / "two")

    # Nothing is live when the first writer reads; the second publishes before the first writes.
    first = InterleavedS3(s3, second_writer)
    manifest_one = Manifest.read(tmp_path / "one" / "manifest.json")
    publish_manifest(ModelStoreClient(first, BUCKET), manifest_one)

    # The first writer's If-None-Match failed (the second's pointer existed), and its retry replaced the
    # pointer it had then read: a whole-manifest publication is last-writer-wins, but never blind.
    assert first.pointer_writes == ["PreconditionFailed", "written"]
    current = read_published_manifest(ModelStoreClient(s3, BUCKET))
    assert current == manifest_one


def test_a_writer_that_always_loses_stops_after_bounded_attempts() -> None:
    client, stubber = stubbed_s3()
    manifest = Manifest()
    body = manifest.to_json().encode()
    versioned = f"manifests/{manifest.sha256}.json"
    files = index_files(manifest)
    index_key, records_key = manifest_index_keys(manifest.sha256)
    for attempt in range(POINTER_ATTEMPTS):
        stubber.add_response(
            "get_object", {"Body": _body(b'{"archives": [], "schema_version": 1}\n'), "ETag": f'"v{attempt}"'}
        )
        # The index and its records are there from the first attempt: created once, then skipped.
        for key, data in ((records_key, files.records), (index_key, files.index)):
            there = {"ContentLength": len(data), "Metadata": {"sha256": hashlib.sha256(data).hexdigest()}}
            stubber.add_response("head_object", there, {"Bucket": BUCKET, "Key": key})
        head = {"ContentLength": len(body), "Metadata": {"sha256": manifest.sha256}}
        stubber.add_response("head_object", head, {"Bucket": BUCKET, "Key": versioned})
        stubber.add_client_error(
            "put_object",
            "PreconditionFailed",
            http_status_code=412,
            expected_params={
                "Bucket": BUCKET,
                "Key": POINTER,
                "Body": ANY,
                "ContentType": "application/json",
                "Metadata": ANY,
                "ChecksumAlgorithm": "SHA256",
                "IfMatch": f'"v{attempt}"',
            },
        )
    changed = Manifest(schema_version=1, archives=())

    def always_new(_: Manifest | None) -> Manifest:
        return changed

    with (
        stubber,
        pytest.raises(
            PublishError, match=rf"another writer kept writing the same key \({POINTER_ATTEMPTS} attempts\)"
        ),
    ):
        # The live body differs from ours in formatting only, so every attempt writes.
        update_live_manifest(ModelStoreClient(client, BUCKET), always_new)
    stubber.assert_no_pending_responses()


def _body(data: bytes) -> Any:
    from io import BytesIO

    from botocore.response import StreamingBody

    return StreamingBody(BytesIO(data), len(data))


# ----- publish-build: the build's manifest under its fingerprint, never the live one ----------------------

FINGERPRINT = "f" * 64


def test_publish_build_writes_the_manifest_under_its_fingerprint_only(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = write_build(tmp_path, ARCHIVES)
    assert main(["upload", "--archives-only", "--from", str(tmp_path), "--bucket", BUCKET]) == 0
    assert "manifest" not in capsys.readouterr().out
    publish_passing_report(s3, manifest)

    assert (
        main(["publish-build", "--from", str(tmp_path), "--fingerprint", FINGERPRINT, "--bucket", BUCKET])
        == 0
    )

    key = f"manifests/builds/{FINGERPRINT}/manifest.json"
    assert capsys.readouterr().out.strip() == f"build manifest s3://{BUCKET}/{key} written"
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == manifest.to_json().encode()
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None
    # Publishing it again (a retried build step) changes nothing.
    assert (
        main(["publish-build", "--from", str(tmp_path), "--fingerprint", FINGERPRINT, "--bucket", BUCKET])
        == 0
    )
    assert capsys.readouterr().out.strip().endswith("kept (already published for this fingerprint)")


def test_publish_build_refuses_a_manifest_naming_an_archive_not_in_the_bucket(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = publish_passing_report(s3, write_build(tmp_path, ARCHIVES))

    assert (
        main(["publish-build", "--from", str(tmp_path), "--fingerprint", FINGERPRINT, "--bucket", BUCKET])
        == 1
    )

    assert "named in the manifest but not in the bucket" in one_line_error(capsys)
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]] == [report]


def test_publish_build_refuses_a_manifest_without_its_passing_serving_report(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = write_build(tmp_path, ARCHIVES)
    upload_build(ModelStoreClient(s3, BUCKET), tmp_path, make_live=False)
    command = ["publish-build", "--from", str(tmp_path), "--fingerprint", FINGERPRINT, "--bucket", BUCKET]

    assert main(command) == 1
    assert one_line_error(capsys) == (
        f"error: s3://{BUCKET}/manifests/{manifest.sha256}.serving-report.json: no serving report of this "
        "manifest; the serving check publishes it first (publish-report)"
    )
    failing = passing_report(manifest)
    first = failing.archives[0].model_copy(update={"passed": False, "error": "Triton did not load it: boom"})
    failing = failing.model_copy(update={"archives": (first, *failing.archives[1:])})
    create_json(
        ModelStoreClient(s3, BUCKET),
        f"manifests/{manifest.sha256}.serving-report.json",
        failing.to_json().encode(),
    )

    assert main(command) == 1
    assert one_line_error(capsys).endswith(
        f"{first.target_model} did not pass the serving check: Triton did not load it: boom"
    )
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="manifests/builds/").get("KeyCount") == 0


def test_an_earlier_build_of_the_same_fingerprint_keeps_its_manifest(s3: Any, tmp_path: Path) -> None:
    first = write_build(tmp_path / "one", ARCHIVES)
    second = write_build(tmp_path / "two", {"resnet-onnx-cccccccccccccccc.tar.gz": b"rebuilt, other bytes"})
    for build, manifest in (("one", first), ("two", second)):
        upload_build(ModelStoreClient(s3, BUCKET), tmp_path / build, make_live=False)
        publish_passing_report(s3, manifest)
    assert (
        main(
            [
                "publish-build",
                "--from",
                str(tmp_path / "one"),
                "--fingerprint",
                FINGERPRINT,
                "--bucket",
                BUCKET,
            ]
        )
        == 0
    )

    assert (
        main(
            [
                "publish-build",
                "--from",
                str(tmp_path / "two"),
                "--fingerprint",
                FINGERPRINT,
                "--bucket",
                BUCKET,
            ]
        )
        == 0
    )

    body = s3.get_object(Bucket=BUCKET, Key=f"manifests/builds/{FINGERPRINT}/manifest.json")["Body"].read()
    assert body == first.to_json().encode()


@pytest.mark.parametrize("fingerprint", ["", "abc", "F" * 64, "../" + "a" * 61])
def test_publish_build_needs_a_real_fingerprint(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], fingerprint: str
) -> None:
    write_build(tmp_path, ARCHIVES)
    upload_build(ModelStoreClient(s3, BUCKET), tmp_path, make_live=False)

    assert (
        main(["publish-build", "--from", str(tmp_path), "--fingerprint", fingerprint, "--bucket", BUCKET])
        == 1
    )

    error = one_line_error(capsys)
    assert "--fingerprint: fingerprint" in error and "allowed: 64 lowercase hex digits" in error
    assert "MODEL_BUILD_FINGERPRINT" in error

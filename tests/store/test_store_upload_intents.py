"""`upload` takes the same intents as `add` (store.intents): a `remove` of one of its archives racing it at
any step never leaves the live manifest naming a deleted object, and whichever side stops says why in one
line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from store_support import BUCKET, SentHeaders, one_line_error, write_build

from triton_mme.cli import main
from triton_mme.core.manifest import Manifest
from triton_mme.store import publish
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.operations import remove_archive
from triton_mme.store.publish import PublishError, read_published_manifest, upload_build

pytestmark = pytest.mark.usefixtures("fake_archives")

ARCHIVE = "resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz"
OTHER = "resnet-torchscript-bbbbbbbbbbbbbbbb.tar.gz"
BUILD = {ARCHIVE: b"onnx archive bytes", OTHER: b"ts bytes"}
UPLOAD_STEPS = ["verified", "announced", "uploaded", "checked", "written"]
REMOVE_STEPS = ["announced", "checked", "deleted"]


def _keys(s3: Any, prefix: str) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]


def _dangling(s3: Any) -> list[str]:
    manifest = read_published_manifest(ModelStoreClient(s3, BUCKET)) or Manifest()
    present = set(_keys(s3, "models/"))
    return [t for t in sorted(manifest.target_models) if f"models/{t}" not in present]


def _refusal(kind: str, intent: str) -> str:
    return (
        f"s3://{BUCKET}/{intent}: {kind} of {ARCHIVE} is in progress; try again when it ends "
        "(if none is running, delete that object)"
    )


@pytest.fixture
def build(s3: Any, tmp_path: Path) -> Path:
    """A build whose archives an earlier `upload --archives-only` already put in the bucket."""
    write_build(tmp_path, BUILD)
    upload_build(ModelStoreClient(s3, BUCKET), tmp_path, make_live=False)
    return tmp_path


def test_a_remove_between_uploads_check_and_manifest_write_is_refused(s3: Any, build: Path) -> None:
    """The issue's case: the remove deletes the archive after upload checked it is there and before the
    pointer moves."""
    original = publish.check_named_objects
    outcomes: list[str] = []

    def check_then_remove(store: ModelStoreClient, manifest: Manifest) -> None:
        original(store, manifest)
        if not outcomes:
            try:
                remove_archive(ModelStoreClient(s3, BUCKET), ARCHIVE)
                outcomes.append("removed")
            except PublishError as error:
                outcomes.append(str(error))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(publish, "check_named_objects", check_then_remove)
        upload_build(ModelStoreClient(s3, BUCKET), build)

    assert _dangling(s3) == []
    assert outcomes[0].startswith(f"s3://{BUCKET}/manifests/intents/{ARCHIVE}/add-")
    assert outcomes[0].endswith(
        f": an add or upload of {ARCHIVE} is in progress; try again when it ends "
        "(if none is running, delete that object)"
    )
    assert _keys(s3, "manifests/intents/") == []


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("step", UPLOAD_STEPS)
def test_a_remove_at_any_step_of_upload_leaves_no_dangling_manifest(
    s3: Any, build: Path, step: str, force: bool
) -> None:
    seen: list[list[str]] = []
    refusals: list[str] = []

    def remove_now(name: str) -> None:
        seen.append(_dangling(s3))
        if name == step:
            try:
                remove_archive(ModelStoreClient(s3, BUCKET), ARCHIVE, force=force)
            except PublishError as error:
                refusals.append(str(error))
        seen.append(_dangling(s3))

    upload_build(ModelStoreClient(s3, BUCKET), build, step=remove_now)

    assert seen and all(dangling == [] for dangling in seen)
    if step == "verified":
        # Before the announcement the remove runs to its end; the upload puts the archive back.
        assert refusals == []
    else:
        intent = refusals[0].split(": ")[0].removeprefix(f"s3://{BUCKET}/")
        assert intent.startswith(f"manifests/intents/{ARCHIVE}/add-")
        assert refusals == [_refusal("an add or upload", intent)]
    assert ARCHIVE in (read_published_manifest(ModelStoreClient(s3, BUCKET)) or Manifest()).target_models
    assert _dangling(s3) == []
    assert _keys(s3, "manifests/intents/") == []


@pytest.mark.parametrize("step", REMOVE_STEPS)
def test_an_upload_at_any_step_of_remove_is_refused_and_leaves_no_dangling_manifest(
    s3: Any, build: Path, step: str
) -> None:
    seen: list[list[str]] = []
    refusals: list[str] = []
    left: list[str] = []

    def upload_now(name: str) -> None:
        seen.append(_dangling(s3))
        if name == step:
            try:
                upload_build(ModelStoreClient(s3, BUCKET), build)
            except PublishError as error:
                refusals.append(str(error))
            left.extend(_keys(s3, "manifests/intents/"))
        seen.append(_dangling(s3))

    remove_archive(ModelStoreClient(s3, BUCKET), ARCHIVE, step=upload_now)

    assert seen and all(dangling == [] for dangling in seen)
    # The refused upload withdrew its intents at once: only the remove's is left while it runs.
    (intent,) = left
    assert intent.startswith(f"manifests/intents/{ARCHIVE}/remove-")
    assert refusals == [_refusal("a remove", intent)]
    assert _keys(s3, "manifests/intents/") == []
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None
    assert f"models/{ARCHIVE}" not in _keys(s3, "models/")


def test_upload_refuses_in_one_line_while_a_remove_is_announced(
    s3: Any, build: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    intent = f"manifests/intents/{ARCHIVE}/remove-0123456789abcdef"
    s3.put_object(Bucket=BUCKET, Key=intent, Body=b"{}")

    assert main(["upload", "--from", str(build), "--bucket", BUCKET]) == 1

    assert one_line_error(capsys) == "error: " + _refusal("a remove", intent)
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None
    assert _keys(s3, "manifests/intents/") == [intent]  # only its own are withdrawn


def test_remove_refuses_in_one_line_while_an_upload_is_announced(
    s3: Any, build: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    announced: list[str] = []

    def remove_now(name: str) -> None:
        if name == "announced":
            announced.extend(_keys(s3, f"manifests/intents/{ARCHIVE}/"))
            assert main(["remove", ARCHIVE, "--bucket", BUCKET]) == 1

    upload_build(ModelStoreClient(s3, BUCKET), build, step=remove_now)

    (intent,) = announced
    assert one_line_error(capsys) == "error: " + _refusal("an add or upload", intent)
    assert f"models/{ARCHIVE}" in _keys(s3, "models/")


def test_an_upload_that_fails_withdraws_its_intents(s3: Any, build: Path) -> None:
    def fail(name: str) -> None:
        if name == "uploaded":
            assert len(_keys(s3, "manifests/intents/")) == len(BUILD)
            raise PublishError("stopped")

    with pytest.raises(PublishError, match="stopped"):
        upload_build(ModelStoreClient(s3, BUCKET), build, step=fail)

    assert _keys(s3, "manifests/intents/") == []
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None


def test_many_archives_take_their_intents_in_a_bounded_number_of_calls(s3: Any, tmp_path: Path) -> None:
    archives = {f"m{i}-onnx-{i:016x}.tar.gz": f"archive {i}".encode() for i in range(1001)}
    write_build(tmp_path, archives)
    sent = SentHeaders(s3)

    upload_build(ModelStoreClient(s3, BUCKET), tmp_path)

    assert len(_intent_puts(sent)) == len(archives)
    # Withdrawn 1,000 keys a call; looked for twice with one listing of 1,000 keys a page, and the
    # archives' existence listed twice (before the upload, before the pointer moves): 8 listings at most,
    # not one per archive.
    assert (len(sent.of("DeleteObjects")), len(sent.of("DeleteObject"))) == (2, 0)
    assert len(sent.of("ListObjectsV2")) <= 8
    assert _keys(s3, "manifests/intents/") == []


def _intent_puts(sent: SentHeaders) -> list[dict[str, str]]:
    return [
        headers
        for headers in sent.of("PutObject")
        if headers.get("Content-Type") == "application/json" and "x-amz-meta-sha256" not in headers
    ]

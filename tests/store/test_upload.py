"""Publishing archives and the manifest to S3 (moto): skip identical, never overwrite, manifest last."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from store_support import ARCHIVES, BUCKET, write_build

from triton_mme.core.locations import INDEX_SUFFIX, manifest_index_keys
from triton_mme.core.manifest import MANIFEST_FILE_NAME, Manifest
from triton_mme.core.manifest_index import index_files
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import PublishError, publish_manifest, read_published_manifest, upload_build

pytestmark = pytest.mark.usefixtures("fake_archives")


class RecordingS3:
    """Passes every call to a real (moto) client and records (operation, key) in order."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: list[tuple[str, str]] = []

    def __getattr__(self, operation: str) -> Any:
        target = getattr(self._client, operation)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            key = kwargs.get("Key") or (args[2] if operation == "upload_file" else "")
            self.calls.append((operation, key))
            return target(*args, **kwargs)

        return call

    def writes(self) -> list[str]:
        """Keys written, leaving out the intents (announced and withdrawn, store.intents)."""
        return [
            key
            for operation, key in self.calls
            if operation in ("upload_file", "put_object") and "/intents/" not in key
        ]


def _keys(s3: Any) -> dict[str, bytes]:
    listing = s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return {o["Key"]: s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listing}


def test_upload_publishes_archives_then_the_manifest_under_its_own_prefix(s3: Any, tmp_path: Path) -> None:
    manifest = write_build(tmp_path, ARCHIVES)
    recorder = RecordingS3(s3)

    report = upload_build(ModelStoreClient(recorder, BUCKET), tmp_path)

    stored = _keys(s3)
    assert stored["models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz"] == b"onnx archive bytes"
    assert stored["models/resnet-torchscript-bbbbbbbbbbbbbbbb.tar.gz"] == b"ts bytes"
    digest = hashlib.sha256(manifest.to_json().encode()).hexdigest()
    assert (
        stored["manifests/manifest.json"] == stored[f"manifests/{digest}.json"] == manifest.to_json().encode()
    )
    assert not any(key.startswith("models/") and key.endswith(".json") for key in stored)
    # Readers follow manifest.json: it must be the very last write.
    assert recorder.writes()[-1] == "manifests/manifest.json"
    assert set(recorder.writes()[:2]) == {f"models/{name}" for name in ARCHIVES}
    assert sorted(report.uploaded) == sorted(f"models/{name}" for name in ARCHIVES)
    assert report.skipped == ()


def test_upload_records_content_type_checksum_and_sha256_metadata(s3: Any, tmp_path: Path) -> None:
    write_build(tmp_path, ARCHIVES)
    upload_build(ModelStoreClient(s3, BUCKET), tmp_path)

    head = s3.head_object(
        Bucket=BUCKET, Key="models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz", ChecksumMode="ENABLED"
    )
    assert head["ContentType"] == "application/gzip"
    assert head["Metadata"]["sha256"] == hashlib.sha256(b"onnx archive bytes").hexdigest()
    assert "ChecksumSHA256" in head


def test_a_second_upload_skips_identical_archives(s3: Any, tmp_path: Path) -> None:
    write_build(tmp_path, ARCHIVES)
    upload_build(ModelStoreClient(s3, BUCKET), tmp_path)
    recorder = RecordingS3(s3)

    report = upload_build(ModelStoreClient(recorder, BUCKET), tmp_path)

    assert report.uploaded == ()
    assert sorted(report.skipped) == sorted(f"models/{name}" for name in ARCHIVES)
    assert not [key for key in recorder.writes() if key.startswith("models/")]


def test_an_object_written_by_another_tool_is_compared_by_its_bytes(s3: Any, tmp_path: Path) -> None:
    write_build(tmp_path, ARCHIVES)
    s3.put_object(Bucket=BUCKET, Key="models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz", Body=b"onnx archive bytes")

    report = upload_build(ModelStoreClient(s3, BUCKET), tmp_path)

    assert report.skipped == ("models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz",)


@pytest.mark.parametrize("existing", [b"different bytes of another size", b"ONNX ARCHIVE BYTES"])
def test_a_key_holding_different_bytes_is_never_overwritten_and_nothing_is_uploaded(
    s3: Any, tmp_path: Path, existing: bytes
) -> None:
    write_build(tmp_path, ARCHIVES)
    # Same key and (in the second case) same size, different bytes: only the content can tell.
    s3.put_object(Bucket=BUCKET, Key="models/resnet-torchscript-bbbbbbbbbbbbbbbb.tar.gz", Body=existing)
    recorder = RecordingS3(s3)

    with pytest.raises(
        PublishError, match=r"models/resnet-torchscript-bbbbbbbbbbbbbbbb\.tar\.gz already exists"
    ):
        upload_build(ModelStoreClient(recorder, BUCKET), tmp_path)

    assert recorder.writes() == []
    assert _keys(s3) == {"models/resnet-torchscript-bbbbbbbbbbbbbbbb.tar.gz": existing}


def test_a_different_sha256_in_metadata_is_refused(s3: Any, tmp_path: Path) -> None:
    write_build(tmp_path, ARCHIVES)
    s3.put_object(
        Bucket=BUCKET,
        Key="models/resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz",
        Body=b"onnx archive bytes",
        Metadata={"sha256": "0" * 64},
    )
    with pytest.raises(PublishError, match="refusing to overwrite"):
        upload_build(ModelStoreClient(s3, BUCKET), tmp_path)


def test_local_archives_are_checked_against_the_manifest_before_any_call(s3: Any, tmp_path: Path) -> None:
    write_build(tmp_path, ARCHIVES)
    (tmp_path / "resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz").write_bytes(b"onnx archive byteZ")
    recorder = RecordingS3(s3)

    with pytest.raises(
        PublishError, match=r"resnet-onnx-aaaaaaaaaaaaaaaa\.tar\.gz: sha256 .* does not match the manifest"
    ):
        upload_build(ModelStoreClient(recorder, BUCKET), tmp_path)
    (tmp_path / "resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz").unlink()
    with pytest.raises(PublishError, match="archive named in the manifest is missing"):
        upload_build(ModelStoreClient(recorder, BUCKET), tmp_path)
    (tmp_path / "resnet-onnx-aaaaaaaaaaaaaaaa.tar.gz").write_bytes(b"short")
    with pytest.raises(PublishError, match="size 5 bytes does not match the manifest"):
        upload_build(ModelStoreClient(recorder, BUCKET), tmp_path)
    assert recorder.calls == []


def test_a_missing_or_broken_local_manifest_is_one_line(tmp_path: Path, s3: Any) -> None:
    with pytest.raises(PublishError, match=r"manifest\.json: cannot read the build manifest"):
        upload_build(ModelStoreClient(s3, BUCKET), tmp_path)
    (tmp_path / MANIFEST_FILE_NAME).write_text("{not json", encoding="utf-8")
    with pytest.raises(PublishError, match="not a valid build manifest") as caught:
        upload_build(ModelStoreClient(s3, BUCKET), tmp_path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("prefix", "manifest_prefix", "message"),
    [("", "manifests/", "--prefix: must name a folder"), ("models/", "models/manifests", "overlaps")],
)
def test_the_manifest_prefix_must_lie_outside_the_model_prefix(
    s3: Any, tmp_path: Path, prefix: str, manifest_prefix: str, message: str
) -> None:
    write_build(tmp_path, ARCHIVES)
    with pytest.raises(PublishError, match=message):
        upload_build(ModelStoreClient.at(s3, BUCKET, models=prefix, manifests=manifest_prefix), tmp_path)


def test_a_manifest_naming_a_missing_archive_is_never_published(s3: Any, tmp_path: Path) -> None:
    manifest = write_build(tmp_path, ARCHIVES)
    with pytest.raises(
        PublishError,
        match=r"resnet-onnx-aaaaaaaaaaaaaaaa\.tar\.gz: named in the manifest but not in the bucket",
    ):
        publish_manifest(ModelStoreClient(s3, BUCKET), manifest)
    assert read_published_manifest(ModelStoreClient(s3, BUCKET)) is None


def test_every_published_manifest_names_only_objects_in_the_bucket(s3: Any, tmp_path: Path) -> None:
    write_build(tmp_path / "one", ARCHIVES)
    write_build(tmp_path / "two", {"resnet-onnx-cccccccccccccccc.tar.gz": b"a newer onnx export"})
    upload_build(ModelStoreClient(s3, BUCKET), tmp_path / "one")
    upload_build(ModelStoreClient(s3, BUCKET), tmp_path / "two")

    stored = _keys(s3)
    manifests = [
        Manifest.from_json(body.decode())
        for key, body in stored.items()
        if key.startswith("manifests/") and key.endswith("json") and not key.endswith(INDEX_SUFFIX)
    ]
    assert len(manifests) == 3  # two immutable copies and the current one
    for manifest in manifests:
        assert all(f"models/{target}" in stored for target in manifest.target_models)
        # Its index and records are there too, and name only objects in the bucket.
        index_key, records_key = manifest_index_keys(manifest.sha256)
        assert stored[index_key] == index_files(manifest).index
        for line in stored[records_key].splitlines():
            assert f"models/{json.loads(line)['target_model']}" in stored
    current = read_published_manifest(ModelStoreClient(s3, BUCKET))
    assert current is not None and current.target_models == {"resnet-onnx-cccccccccccccccc.tar.gz"}
    assert json.loads(stored["manifests/manifest.json"])["archives"][0]["name"] == "resnet"


def test_the_published_manifest_keeps_where_each_archive_is_served(s3: Any, tmp_path: Path) -> None:
    from triton_mme.core.manifest import ComponentPlacement

    built = write_build(tmp_path, ARCHIVES)
    onnx = built.find("resnet", "onnx")
    placement = ComponentPlacement(min_copies=0)
    placed = Manifest(
        archives=tuple(
            r.model_copy(update={"placement": placement}) if r is onnx else r for r in built.archives
        )
    )
    (tmp_path / MANIFEST_FILE_NAME).write_text(placed.to_json(), encoding="utf-8")

    upload_build(ModelStoreClient(s3, BUCKET), tmp_path)

    published = read_published_manifest(ModelStoreClient(s3, BUCKET))
    assert published == placed
    assert published is not None and published.find("resnet", "onnx").placement == placement
    assert not published.find("resnet", "torchscript").is_dedicated

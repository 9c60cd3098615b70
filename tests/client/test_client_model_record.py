"""An application resolves one model by reading its record, not the whole manifest, and keeps what it read:
three small requests the first time (HEAD of the manifest, its index, a ranged GET of the record), none
while the answer is younger than max_age_s, one HEAD after that, and the new manifest once it moved."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from store_support import BUCKET

from benchmarks.capacity_inputs import synthetic_manifest, synthetic_record
from triton_mme.client.invoke import UsageError, resolve_target
from triton_mme.client.manifest_source import ManifestSource
from triton_mme.core.locations import live_manifest_key, manifest_index_keys
from triton_mme.core.manifest import Manifest
from triton_mme.core.manifest_index import index_files
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import publish_index, publish_manifest

LIVE = f"s3://{BUCKET}/{live_manifest_key()}"


def calls_of(s3: Any) -> list[str]:
    """The S3 operations `s3` sends from now on, in order."""
    seen: list[str] = []
    s3.meta.events.register("before-call.s3", lambda model, **_: seen.append(model.name))
    return seen


def promote(s3: Any, manifest: Manifest) -> None:
    """What the deployment's promotion does after the serving check published the build: the index is
    there (publish-build wrote it), the pointer is replaced with the manifest's sha256 in its metadata."""
    publish_index(ModelStoreClient(s3, BUCKET), manifest)
    body = manifest.to_json().encode()
    digest = hashlib.sha256(body).hexdigest()
    s3.put_object(Bucket=BUCKET, Key=live_manifest_key(), Body=body, Metadata={"sha256": digest})


def test_a_published_manifest_resolves_by_three_small_requests_then_none(s3: Any) -> None:
    manifest = synthetic_manifest(300)
    promote(s3, manifest)
    source = ManifestSource(LIVE, s3=s3)
    seen = calls_of(s3)
    target = resolve_target(source, model="m0123")
    assert target.record == manifest.find("m0123")
    assert seen == ["HeadObject", "GetObject", "GetObject"]  # never the 300-model manifest itself
    assert resolve_target(source, model="m0123").record == target.record
    assert resolve_target(source, model="m0124").record == manifest.find("m0124")
    assert seen == ["HeadObject", "GetObject", "GetObject", "GetObject"]  # only the new model's record


def test_a_promotion_is_followed_after_max_age(s3: Any) -> None:
    promote(s3, synthetic_manifest(3))
    source = ManifestSource(LIVE, s3=s3, max_age_s=0)
    assert resolve_target(source, model="m0001").record == synthetic_record(1)
    moved = synthetic_record(1, 42)
    promote(s3, Manifest(archives=(synthetic_record(0), moved)))
    assert resolve_target(source, model="m0001").record == moved
    kept = ManifestSource(LIVE, s3=s3, max_age_s=3600)
    assert resolve_target(kept, model="m0001").record == moved
    promote(s3, synthetic_manifest(3))
    assert resolve_target(kept, model="m0001").record == moved  # within max_age_s: kept as read


def test_the_store_commands_publish_the_index_before_the_pointer(s3: Any) -> None:
    store = ModelStoreClient(s3, BUCKET)
    manifest = synthetic_manifest(2)
    for record in manifest.archives:
        s3.put_object(Bucket=BUCKET, Key=f"models/{record.target_model}", Body=b"archive")
    keys: list[str] = []
    s3.meta.events.register(
        "before-parameter-build.s3.PutObject", lambda params, **_: keys.append(params["Key"])
    )
    publish_manifest(store, manifest)
    index_key, records_key = manifest_index_keys(manifest.sha256)
    assert keys.index(records_key) < keys.index(index_key) < keys.index(live_manifest_key())
    source = ManifestSource(LIVE, s3=s3)
    assert resolve_target(source, model="m0001").record == manifest.find("m0001")


def test_a_manifest_without_an_index_is_read_whole_once(s3: Any) -> None:
    manifest = synthetic_manifest(3)
    s3.put_object(Bucket=BUCKET, Key=live_manifest_key(), Body=manifest.to_json().encode())
    source = ManifestSource(LIVE, s3=s3)
    seen = calls_of(s3)
    assert resolve_target(source, model="m0002").record == manifest.find("m0002")
    assert resolve_target(source, model="m0001").record == manifest.find("m0001")
    assert seen == ["HeadObject", "GetObject"]


def test_an_unknown_name_among_thousands_lists_the_closest_few_and_the_count(s3: Any) -> None:
    promote(s3, synthetic_manifest(2000))
    with pytest.raises(UsageError) as caught:
        resolve_target(ManifestSource(LIVE, s3=s3), model="m12345")
    message = str(caught.value)
    assert "; did you mean m1" in message and "? 2,000 known; closest: " in message
    assert "m1234" in message.rpartition("closest: ")[2]
    assert len(message) < 250


def test_an_index_that_does_not_match_its_manifest_is_refused(s3: Any) -> None:
    manifest = synthetic_manifest(2)
    promote(s3, manifest)
    index_key, _ = manifest_index_keys(manifest.sha256)
    other = index_files(synthetic_manifest(3)).index
    s3.delete_object(Bucket=BUCKET, Key=index_key)
    s3.put_object(Bucket=BUCKET, Key=index_key, Body=other)
    with pytest.raises(ValueError, match=rf"indexes manifest [0-9a-f]{{64}}, not {manifest.sha256}"):
        resolve_target(ManifestSource(LIVE, s3=s3), model="m0001")


def test_a_local_manifest_is_parsed_once_and_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(synthetic_manifest(3).to_json())
    parsed: list[int] = []
    original = Manifest.from_json

    def counted(text: str | bytes) -> Manifest:
        parsed.append(1)
        return original(text)

    monkeypatch.setattr(Manifest, "from_json", counted)
    source = ManifestSource(str(path), max_age_s=0)
    assert resolve_target(source, model="m0001").record == synthetic_record(1)
    assert resolve_target(source, model="m0002").record == synthetic_record(2)
    assert len(parsed) == 1
    path.write_text(Manifest(archives=(synthetic_record(1, 7),)).to_json())
    assert resolve_target(source, model="m0001").record == synthetic_record(1, 7)
    assert len(parsed) == 2


def test_a_target_model_resolves_by_its_record_not_the_manifest(s3: Any) -> None:
    manifest = synthetic_manifest(300)
    promote(s3, manifest)
    source = ManifestSource(LIVE, s3=s3)
    seen = calls_of(s3)
    wanted = manifest.find("m0123")
    target = resolve_target(source, target_model=wanted.target_model)
    assert (target.target_model, target.record) == (wanted.target_model, wanted)
    assert seen == ["HeadObject", "GetObject", "GetObject"]  # never the 300-model manifest itself


@pytest.mark.parametrize(
    "key",
    [
        "m0123-torchscript-000000000000007b.tar.gz",  # no such format
        "m9999-onnx-000000000000270f.tar.gz",  # no such model
        "m0123-onnx-ffffffffffffffff.tar.gz",  # another build of the model
    ],
)
def test_a_target_model_the_manifest_does_not_hold_is_sent_without_a_record(s3: Any, key: str) -> None:
    promote(s3, synthetic_manifest(300))
    target = resolve_target(ManifestSource(LIVE, s3=s3), target_model=key)
    assert (target.target_model, target.record) == (key, None)


def test_a_target_model_in_a_local_manifest_is_its_record(tmp_path: Path) -> None:
    manifest = synthetic_manifest(3)
    path = tmp_path / "manifest.json"
    path.write_text(manifest.to_json())
    wanted = manifest.find("m0002")
    assert resolve_target(ManifestSource(str(path)), target_model=wanted.target_model).record == wanted

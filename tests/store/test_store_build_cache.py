"""The build cache shared through the store, on moto: a runner with an empty build directory reuses what an
earlier runner built and published, and anything gone or changed in the bucket is rebuilt, not trusted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from build_support import tiny_cnn, tiny_roberta
from store_support import BUCKET

from triton_mme.catalog import Catalog
from triton_mme.cli import main
from triton_mme.core.locations import BUILD_CACHE_FOLDER
from triton_mme.core.manifest import Manifest
from triton_mme.model_build.cache import CACHE_DIR_NAME
from triton_mme.model_build.pipeline import ArchiveOutcome, build_catalog, catalog_cache_keys
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import upload_build

STORE = ["--bucket", BUCKET]


@pytest.fixture
def catalog_file(tmp_path: Path) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": [tiny_cnn(), tiny_roberta()]}), encoding="utf-8")
    return path


@pytest.fixture
def published(s3: Any, built: tuple[Path, Manifest], capsys: pytest.CaptureFixture[str]) -> Manifest:
    """An earlier runner's end: archives uploaded, then their cache records."""
    build_dir, manifest = built
    upload_build(ModelStoreClient(s3, BUCKET), build_dir, make_live=False)
    assert main(["publish-cache", "--from", str(build_dir), *STORE]) == 0
    count = len(manifest.archives)
    assert capsys.readouterr().out == f"build cache: {count} records written, 0 already there\n"
    return manifest


def _fetch(catalog_file: Path, to: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["fetch-cache", "--catalog", str(catalog_file), "--to", str(to), *STORE]) == 0
    return capsys.readouterr().out.splitlines()


def _record_keys(s3: Any) -> list[str]:
    listing = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"manifests/{BUILD_CACHE_FOLDER}")
    return sorted(item["Key"] for item in listing.get("Contents", []))


def test_records_are_keyed_by_the_build_cache_key_of_each_archive(
    s3: Any, published: Manifest, tiny_catalog: Catalog
) -> None:
    keys = catalog_cache_keys(tiny_catalog)
    assert len(keys) == len(published.archives)
    assert _record_keys(s3) == sorted(f"manifests/{BUILD_CACHE_FOLDER}{key}.json" for key in keys.values())


def test_a_fresh_runner_reuses_every_published_archive_without_exporting(
    published: Manifest,
    tiny_catalog: Catalog,
    catalog_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    runner = tmp_path / "runner"
    count = len(published.archives)
    assert _fetch(catalog_file, runner, capsys) == [
        f"build cache: {count} of {count} archives from s3://{BUCKET}, 0 to build"
    ]
    outcomes: list[ArchiveOutcome] = []
    manifest = build_catalog(tiny_catalog, runner, progress=False, on_archive=outcomes.append)
    assert [outcome.cached for outcome in outcomes] == [True] * count
    assert manifest == published


def test_publishing_again_keeps_the_records(
    published: Manifest, built: tuple[Path, Manifest], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["publish-cache", "--from", str(built[0]), *STORE]) == 0
    assert (
        capsys.readouterr().out
        == f"build cache: 0 records written, {len(published.archives)} already there\n"
    )


def test_an_archive_gone_from_the_bucket_is_rebuilt_and_leaves_nothing_behind(
    s3: Any, published: Manifest, catalog_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = published.archives[0]
    s3.delete_object(Bucket=BUCKET, Key=f"models/{gone.target_model}")
    runner = tmp_path / "runner"
    lines = _fetch(catalog_file, runner, capsys)
    assert lines[0] == f"rebuild  {gone.name}/{gone.format}: s3://{BUCKET}/models/{gone.target_model} is gone"
    assert lines[-1].endswith(f"{len(published.archives) - 1} of {len(published.archives)} archives from "
                              f"s3://{BUCKET}, 1 to build")  # fmt: skip
    assert not (runner / gone.target_model).exists()
    assert not list(runner.glob(".partial-*"))
    assert len(list((runner / CACHE_DIR_NAME).glob("*.json"))) == len(published.archives) - 1


def test_an_archive_with_other_bytes_than_its_record_is_not_reused(
    s3: Any, published: Manifest, catalog_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = published.archives[-1]
    s3.put_object(Bucket=BUCKET, Key=f"models/{changed.target_model}", Body=b"not the archive")
    runner = tmp_path / "runner"
    lines = _fetch(catalog_file, runner, capsys)
    reason = f"s3://{BUCKET}/models/{changed.target_model} holds other bytes than its record states"
    assert f"rebuild  {changed.name}/{changed.format}: {reason}" in lines
    assert not (runner / changed.target_model).exists()


def test_a_record_that_is_not_an_archive_record_is_a_miss(
    s3: Any, published: Manifest, catalog_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _record_keys(s3)[0]
    record = json.loads(s3.get_object(Bucket=BUCKET, Key=first)["Body"].read())
    s3.put_object(Bucket=BUCKET, Key=first, Body=json.dumps({**record, "target_model": "../../etc/passwd"}))
    lines = _fetch(catalog_file, tmp_path / "runner", capsys)
    assert sum("its record is not an archive record" in line for line in lines) == 1
    assert not (tmp_path / "etc").exists()


def test_an_empty_store_is_a_miss_for_every_archive(
    s3: Any, tiny_catalog: Catalog, catalog_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    count = len(catalog_cache_keys(tiny_catalog))
    assert _fetch(catalog_file, tmp_path / "runner", capsys) == [
        f"build cache: 0 of {count} archives from s3://{BUCKET}, {count} to build"
    ]


def test_records_of_archives_not_in_the_bucket_are_not_published(
    s3: Any, built: tuple[Path, Manifest], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["publish-cache", "--from", str(built[0]), *STORE]) == 0
    assert capsys.readouterr().out == "build cache: 0 records written, 0 already there\n"
    assert _record_keys(s3) == []


def test_a_record_of_another_model_under_a_key_is_not_fetched(
    s3: Any, published: Manifest, tiny_catalog: Catalog, catalog_file: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    keys = catalog_cache_keys(tiny_catalog)
    other = s3.get_object(
        Bucket=BUCKET, Key=f"manifests/{BUILD_CACHE_FOLDER}{keys['tiny-roberta/onnx']}.json"
    )
    s3.put_object(
        Bucket=BUCKET,
        Key=f"manifests/{BUILD_CACHE_FOLDER}{keys['tiny-cnn/onnx']}.json",
        Body=other["Body"].read(),
    )
    lines = _fetch(catalog_file, tmp_path / "runner", capsys)
    assert "rebuild  tiny-cnn/onnx: its record names tiny-roberta/onnx, not tiny-cnn/onnx" in lines
    assert not (tmp_path / "runner" / CACHE_DIR_NAME / f"{keys['tiny-cnn/onnx']}.json").exists()

"""The build cache shared through the store: what lets a runner reuse an archive an earlier runner built.

A runner starts with an empty build directory, so its local cache (model_build.cache) never hits: without
this every deployment that changes one entry rebuilds the whole catalog. After a build's archives are
published, `publish-cache` writes each archive's cache record under `<manifest prefix>build-cache/<key>.json`
(once; the key is the build cache key: the entry's build settings, its checkpoint pin, the build code and the
library versions). Before the next build, `fetch-cache` looks up the key of every (model, format) it is about
to build and, for each record found, downloads the archive and its companion files, each checked against the
digest the record or its name states, and files the record in the local cache, where the build finds it.

A record whose archive or companion is gone (removed with `triton-mme remove`) or does not match is a miss:
the entry is built again. Nothing here changes what the endpoint serves: the serving check still loads every
archive of the build.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from botocore.exceptions import ClientError

from triton_mme.core.files import file_sha256, write_atomically
from triton_mme.core.locations import BUILD_CACHE_FOLDER
from triton_mme.core.manifest import ArchiveRecord
from triton_mme.core.naming import COMPANION_NAME
from triton_mme.model_build.cache import CACHE_DIR_NAME
from triton_mme.store.errors import DifferentContentError
from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import create_json, existing_keys, is_missing, read_local_manifest

# Lookups and downloads at once: S3 answers each in tens of milliseconds, so a thousand records take seconds.
FETCH_THREADS = 16
MAX_RECORD_BYTES = 1024 * 1024


def cache_record_key(store: ModelStoreClient, key: str) -> str:
    return f"{store.prefixes.manifests}{BUILD_CACHE_FOLDER}{key}.json"


@dataclass(frozen=True)
class CacheFetch:
    """What `fetch_cached` found: the (model, format)s now in the local cache, and those to build."""

    hits: tuple[str, ...]
    misses: tuple[str, ...]
    # A record found but not usable (its archive gone, or other bytes): why, per (model, format).
    unusable: Mapping[str, str]


def _get_record(store: ModelStoreClient, key: str) -> ArchiveRecord | str | None:
    """The record under `key`; None when there is none; a reason (str) when it cannot be used."""
    try:
        answer = store.s3.get_object(Bucket=store.bucket, Key=cache_record_key(store, key))
    except ClientError as error:
        if is_missing(error):
            return None
        raise
    body = answer["Body"].read(MAX_RECORD_BYTES + 1)
    if len(body) > MAX_RECORD_BYTES:
        return f"its record is over {MAX_RECORD_BYTES} bytes"
    try:
        return ArchiveRecord.model_validate_json(body)
    except ValueError:
        return "its record is not an archive record"


def _download_checked(store: ModelStoreClient, key: str, path: Path, expected: str) -> str | None:
    """Download `key` to `path` (scratch name, then moved in place) when its sha256 starts with `expected`;
    the reason otherwise (nothing is left behind)."""
    if path.is_file() and file_sha256(path).startswith(expected):
        return None
    # Two archives may share a companion file: each download has a scratch name of its own.
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=".partial-")
    os.close(handle)
    partial = Path(scratch)
    try:
        try:
            store.s3.download_file(store.bucket, key, str(partial))
        except ClientError as error:
            if is_missing(error):
                return f"{store.url(key)} is gone"
            raise
        if not file_sha256(partial).startswith(expected):
            return f"{store.url(key)} holds other bytes than its record states"
        os.replace(partial, path)
        return None
    finally:
        partial.unlink(missing_ok=True)


def _fetch_one(store: ModelStoreClient, archive: str, key: str, out_dir: Path) -> ArchiveRecord | str | None:
    record = _get_record(store, key)
    if not isinstance(record, ArchiveRecord):
        return record
    # The build earns a hit only with the whole provenance and the model check (model_build.cache); a record
    # of another model or format is not even downloaded.
    if f"{record.name}/{record.format}" != archive:
        return f"its record names {record.name}/{record.format}, not {archive}"
    problem = _download_checked(
        store, store.prefixes.models + record.target_model, out_dir / record.target_model, record.sha256
    )
    for name in sorted(record.files.values()):
        if problem:
            break
        named = COMPANION_NAME.match(name)
        if named is None:
            return f"its record names {name!r}, not a companion file"
        problem = _download_checked(store, store.prefixes.manifests + name, out_dir / name, named["digest"])
    if problem:
        return problem
    write_atomically(out_dir / CACHE_DIR_NAME / f"{key}.json", record.model_dump_json(indent=2))
    return record


def fetch_cached(store: ModelStoreClient, keys: Mapping[str, str], out_dir: Path) -> CacheFetch:
    """For each `<name>/<format>` -> cache key, put the store's cached archive, its companions and its record
    into `out_dir` (the build directory) where there is one; returns what was found."""
    (out_dir / CACHE_DIR_NAME).mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=FETCH_THREADS) as pool:
        results = dict(
            zip(
                keys,
                pool.map(lambda item: _fetch_one(store, item[0], item[1], out_dir), keys.items()),
                strict=True,
            )
        )
    hits = tuple(archive for archive, found in results.items() if isinstance(found, ArchiveRecord))
    unusable = {archive: found for archive, found in results.items() if isinstance(found, str)}
    misses = tuple(archive for archive in keys if archive not in hits)
    return CacheFetch(hits=hits, misses=misses, unusable=unusable)


@dataclass(frozen=True)
class CachePublish:
    written: tuple[str, ...]
    kept: tuple[str, ...]


def _local_records(out_dir: Path) -> Iterable[tuple[str, ArchiveRecord]]:
    for path in sorted((out_dir / CACHE_DIR_NAME).glob("*.json")):
        try:
            yield path.stem, ArchiveRecord.model_validate_json(path.read_bytes())
        except ValueError:
            continue  # a record the local build would not use either


def publish_cached(store: ModelStoreClient, out_dir: Path) -> CachePublish:
    """Write the cache record of every archive of `out_dir/manifest.json` whose archive and companion files
    are in the bucket, once each (run after `upload --archives-only`). A record already there with other bytes
    (an earlier build of the same key) is kept: both archives are valid builds of that key."""
    manifest = read_local_manifest(out_dir)
    published = {(record.target_model, record.sha256) for record in manifest.archives}
    records = [
        (key, record)
        for key, record in _local_records(out_dir)
        if (record.target_model, record.sha256) in published
    ]
    models, manifests = store.prefixes.models, store.prefixes.manifests
    archives = existing_keys(store, [models + record.target_model for _, record in records])
    companions = existing_keys(
        store, [manifests + name for _, record in records for name in record.files.values()]
    )
    complete = [
        (key, record)
        for key, record in records
        if models + record.target_model in archives
        and all(manifests + name in companions for name in record.files.values())
    ]

    def publish(item: tuple[str, ArchiveRecord]) -> bool:
        key, record = item
        try:
            return create_json(store, cache_record_key(store, key), record.model_dump_json(indent=2).encode())
        except DifferentContentError:
            return False

    with ThreadPoolExecutor(max_workers=FETCH_THREADS) as pool:
        outcomes = list(pool.map(publish, complete))
    written = tuple(key for (key, _), wrote in zip(complete, outcomes, strict=True) if wrote)
    kept = tuple(key for (key, _), wrote in zip(complete, outcomes, strict=True) if not wrote)
    return CachePublish(written=written, kept=kept)

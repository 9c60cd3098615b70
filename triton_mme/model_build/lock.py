"""`triton-mme lock`: list the catalog's `variants: listed` families, pin every checkpoint in the lock file.

Local checkpoints are read in place; S3 ones are downloaded (streamed through the hash into a scratch folder,
then deleted) with the caller's credentials. An S3 checkpoint whose objects still have the locked ETags and
sizes is not downloaded again; a local checkpoint whose files still have the size, modification time and inode
recorded when it was last pinned is not read again (model_build.lock_stat_cache; `rehash` reads every one).
The lock is written atomically, sorted, so an unchanged catalog gives the same
file and a changed checkpoint changes one record.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from triton_mme.catalog import CHECKPOINT_KIND, Catalog, CatalogError, ModelEntry, parse_catalog
from triton_mme.catalog.checkpoints import (
    ONNX_SUFFIX,
    SAFETENSORS_SUFFIX,
    CheckpointError,
    CheckpointLocation,
)
from triton_mme.catalog.families import (
    LISTED,
    FamilyError,
    is_family,
    list_local_variants,
    source_pattern,
)
from triton_mme.catalog.lock import CatalogLock, CheckpointPin, lock_path, read_lock
from triton_mme.core.bounded import load_yaml
from triton_mme.core.errors import quoted
from triton_mme.core.files import write_atomically
from triton_mme.core.limits import MAX_CATALOG_BYTES
from triton_mme.model_build import checkpoint_files
from triton_mme.model_build.lock_stat_cache import StatCache, signature
from triton_mme.sizing.checkpoint_sources import inspect_local, local_pin


@dataclass(frozen=True)
class LockResult:
    lock: CatalogLock
    changed: tuple[str, ...]
    path: Path


def _s3_variants(client: Any, folder: CheckpointLocation, suffix: str) -> list[str]:
    names: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=folder.bucket, Prefix=folder.key, Delimiter="/"
    ):
        if suffix in (SAFETENSORS_SUFFIX, ONNX_SUFFIX):
            names += [
                item["Key"][len(folder.key) : -len(suffix)]
                for item in page.get("Contents", [])
                if item["Key"].endswith(suffix)
            ]
        else:
            names += [
                prefix["Prefix"][len(folder.key) :].rstrip("/") for prefix in page.get("CommonPrefixes", [])
            ]
    return sorted(names)


def _families(raw: dict[str, Any], base_dir: Path, client_for: Any) -> dict[str, tuple[str, ...]]:
    families = {}
    models = raw.get("models") if isinstance(raw, dict) else None
    for block in models if isinstance(models, list) else []:
        if not is_family(block) or block.get("variants") != LISTED:
            continue
        family = str(block["family"])
        before, after, _ = source_pattern(family, block)
        folder = CheckpointLocation(before)
        if folder.is_s3:
            listed = _s3_variants(client_for(), folder, after)
        else:
            listed = list_local_variants((base_dir / before).resolve(), after, family=family)
        families[family] = tuple(listed)
    return families


def _unchanged_s3(client: Any, entry: ModelEntry, pin: CheckpointPin | None) -> bool:
    """The locked S3 objects still carry the ETags recorded with the pin."""
    if pin is None or pin.source != entry.source or not pin.etags:
        return False
    location = entry.checkpoint_location
    for name, etag in pin.etags.items():
        key = location.joined(name).key if name else location.key
        try:
            head = client.head_object(Bucket=location.bucket, Key=key)
        except Exception:
            return False
        if head.get("ETag") != etag:
            return False
    return True


def _etags(client: Any, entry: ModelEntry, copy: Path) -> dict[str, str]:
    location = entry.checkpoint_location
    kind = entry.checkpoint_kind
    if kind is not None and kind.is_file:
        return {"": client.head_object(Bucket=location.bucket, Key=location.key)["ETag"]}
    return {
        p.name: client.head_object(Bucket=location.bucket, Key=location.joined(p.name).key)["ETag"]
        for p in sorted(copy.iterdir())
    }


def _local_pin(entry: ModelEntry, base_dir: Path, cache: StatCache | None) -> CheckpointPin:
    kind = entry.checkpoint_kind
    assert kind is not None
    try:
        path = entry.checkpoint_location.local_path(base_dir)
    except CheckpointError:
        return local_pin(entry, base_dir)  # which says what is wrong
    now = signature(path, kind) if cache is not None else None
    if cache is not None:
        kept = cache.pin(path, entry.source, now)
        if kept is not None:
            return kept
    pin = local_pin(entry, base_dir)
    if cache is not None:
        # Taken before the hash: a file changed during it no longer matches, and is hashed next time.
        cache.record(path, entry.source, now, pin)
    return pin


def _pin(
    entry: ModelEntry, base_dir: Path, old: CheckpointPin | None, client_for: Any, cache: StatCache | None
) -> CheckpointPin:
    location = entry.checkpoint_location
    kind = entry.checkpoint_kind
    assert kind is not None
    if not location.is_s3:
        return _local_pin(entry, base_dir, cache)
    client = client_for()
    if old is not None and _unchanged_s3(client, entry, old):
        return old
    with tempfile.TemporaryDirectory(prefix="triton-mme-lock-") as scratch:
        staging = Path(scratch) / "copy"
        staging.mkdir()
        sha256 = checkpoint_files.fetch_into(entry, base_dir, staging, client)
        copy = staging / kind.file_name if kind.is_file else staging
        parameters = inspect_local(entry, copy)
        size = sum(p.stat().st_size for p in staging.iterdir())
        return CheckpointPin(
            source=entry.source,
            sha256=sha256,
            size_bytes=size,
            parameters=parameters,
            etags=_etags(client, entry, staging),
        )


def _refuse_second_pins(catalog: Catalog, pins: dict[str, CheckpointPin], catalog_path: Path) -> None:
    """A `sha256:` written in the catalog must be the content the lock pins: otherwise `lock` would record
    one pin and the build refuse the other, with nothing said about which line to change."""
    for entry in catalog.models:
        pin = pins.get(entry.name)
        if pin is not None and entry.sha256 is not None and entry.sha256 != pin.sha256:
            raise CatalogError(
                f"{catalog_path}: model {quoted(entry.name)}: sha256: {entry.sha256[:16]}… in the catalog is "
                f"not its checkpoint's content ({pin.sha256[:16]}…); delete that sha256: line (the lock file "
                "pins every checkpoint), or put back the checkpoint it names"
            )


def write_lock(
    catalog_path: Path, *, check_only: bool = False, s3_client: Any = None, rehash: bool = False
) -> LockResult:
    """List, pin and (unless check_only) write the lock file beside the catalog; CatalogError on a bad one.

    Unchanged local checkpoints are taken from the stat cache unless `rehash` (which hashes every one and
    records what it found)."""
    clients: list[Any] = [s3_client]

    def client_for() -> Any:
        if clients[0] is None:
            import boto3

            clients[0] = boto3.client("s3")
        return clients[0]

    base_dir = catalog_path.resolve().parent
    try:
        raw = load_yaml(catalog_path.read_bytes(), where=str(catalog_path), max_bytes=MAX_CATALOG_BYTES)
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise CatalogError(f"{catalog_path}: cannot read the catalog ({error})") from None
    path = lock_path(catalog_path)
    old = read_lock(path) or CatalogLock()
    try:
        listed = CatalogLock(families=_families(raw or {}, base_dir, client_for))
    except FamilyError as error:
        raise CatalogError(f"{catalog_path}: {error}") from None
    catalog: Catalog = parse_catalog(raw, origin=str(catalog_path), base_dir=base_dir, lock=listed)
    cache = StatCache.beside(catalog_path)
    lookup = StatCache(cache.path) if rehash else cache
    pins = {
        entry.name: _pin(entry, base_dir, old.checkpoints.get(entry.name), client_for, lookup)
        for entry in catalog.models
        if entry.source_kind == CHECKPOINT_KIND
    }
    lookup.save()
    _refuse_second_pins(catalog, pins, catalog_path)
    lock = CatalogLock(families=listed.families, checkpoints=pins)
    changed = tuple(sorted(name for name, pin in pins.items() if old.checkpoints.get(name) != pin))
    changed += tuple(sorted(f"{name} (removed)" for name in old.checkpoints if name not in pins))
    if not check_only:
        write_atomically(path, lock.to_yaml())
    return LockResult(lock, changed, path)

"""A checkpoint's verified local copy: what the build loads, never the user's file itself.

The files the build reads (the state dict, or a Hugging Face folder's config, tokenizer and safetensors
weights, catalog.checkpoints) are copied from the local path or downloaded from S3 into a private directory,
and hashed on the way; a copy whose sha256 is not the pin is deleted and the build of that entry stops before
any export. Nothing else of the folder is copied, so no modeling code or pickle file is even present where the
model loads. The copies are kept by sha256 under the build directory's `.sources/`, so a rebuild does not
download again.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

from triton_mme.catalog import CatalogError, ModelEntry
from triton_mme.catalog.checkpoints import (
    CheckpointError,
    CheckpointLocation,
    folder_digest,
    hf_folder_files,
    local_folder_files,
)
from triton_mme.core.errors import describe_aws_error, quoted

SOURCES_DIR_NAME = ".sources"
_CHUNK = 8 * 1024 * 1024


def _copy_hashing(read: Any, target: Path) -> str:
    digest = hashlib.sha256()
    with target.open("wb") as out:
        while chunk := read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _copy_local(path: Path, target: Path) -> str:
    with path.open("rb") as stream:
        return _copy_hashing(stream.read, target)


def _s3_files(client: Any, location: CheckpointLocation) -> list[str]:
    """The names of the files the build reads directly under an S3 prefix."""
    names = []
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=location.bucket, Prefix=location.key, Delimiter="/"
    ):
        names += [item["Key"][len(location.key) :] for item in page.get("Contents", [])]
    return hf_folder_files(names)


def _download(client: Any, location: CheckpointLocation, target: Path) -> str:
    body = client.get_object(Bucket=location.bucket, Key=location.key)["Body"]
    try:
        return _copy_hashing(body.read, target)
    finally:
        body.close()


def fetch_into(entry: ModelEntry, base_dir: Path, staging: Path, s3_client: Any) -> str:
    """Copy the checkpoint into `staging`; its sha256 (the pin's form for its kind)."""
    location, kind = entry.checkpoint_location, entry.checkpoint_kind
    assert kind is not None
    if location.is_s3:
        client = s3_client or _default_client()
        if kind.is_file:
            return _download(client, location, staging / kind.file_name)
        names = _s3_files(client, location)
        return folder_digest(
            {name: _download(client, location.joined(name), staging / name) for name in names}
        )
    path = location.local_path(base_dir)
    if kind.is_file:
        return _copy_local(path, staging / kind.file_name)
    return folder_digest(
        {name: _copy_local(file, staging / name) for name, file in local_folder_files(path).items()}
    )


def _default_client() -> Any:
    import boto3

    return boto3.client("s3")


def materialize(entry: ModelEntry, *, base_dir: Path, cache_dir: Path, s3_client: Any = None) -> Path:
    """The verified local copy of the entry's checkpoint (a file for a state dict, a folder otherwise).

    CatalogError (one line) when it cannot be read or its sha256 is not the pin; nothing is left behind then.
    """
    where = f"model {quoted(entry.name)}: source: {entry.checkpoint_location.text}"
    if entry.sha256 is None:
        raise CatalogError(f"{where}: not pinned; run `triton-mme lock` (writes models.lock.yaml)")
    final = cache_dir / entry.sha256
    kind = entry.checkpoint_kind
    assert kind is not None
    if final.is_dir():
        return final / kind.file_name if kind.is_file else final
    cache_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=cache_dir))
    try:
        try:
            digest = fetch_into(entry, base_dir, staging, s3_client)
        except OSError as error:
            raise CatalogError(f"{where}: cannot read it ({error.strerror or error})") from None
        except CheckpointError as error:
            raise CatalogError(f"model {quoted(entry.name)}: source: {error}") from None
        except Exception as error:
            if type(error).__module__.startswith("botocore"):
                raise CatalogError(f"{where}: {describe_aws_error(error)}") from None
            raise
        if digest != entry.sha256:
            raise CatalogError(
                f"{where}: its content's sha256 is {digest[:16]}…, the pin says {entry.sha256[:16]}…; "
                "allowed: the pinned checkpoint (if the change is intended, run `triton-mme lock`)"
            )
        staging.rename(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final / kind.file_name if kind.is_file else final


def release_local_copies(entries: list[ModelEntry], cache_dir: Path) -> None:
    """Remove the verified copies of local checkpoints once the build has read them: the pinned files are on
    disk already, and a rebuild copies (and checks) them again in seconds. Downloads from S3 are kept, so a
    rebuild does not download again."""
    for entry in entries:
        if entry.checkpoint_kind is None or entry.sha256 is None or entry.checkpoint_location.is_s3:
            continue
        shutil.rmtree(cache_dir / entry.sha256, ignore_errors=True)

"""What the build runner needs of the catalog's own checkpoints: the local ones shipped in its source, read
access to exactly the S3 ones.

A local checkpoint travels in the runner's source asset at its path relative to the catalog (so it must lie
inside the catalog's folder), with the lock file beside the catalog: the asset's hash, and so the build's
fingerprint, changes exactly when one of them does. Only the files the build reads are shipped (a Hugging Face
folder's config, tokenizer and safetensors weights, catalog.checkpoints).

S3 checkpoints are granted by location: `s3:GetObject` on each state dict's key or folder's prefix, collapsed
to the common folder when several checkpoints share one (a family: the IAM policy stays far below its size
limit at thousands of models), and `s3:ListBucket` on the folder prefixes only (the build lists a Hugging
Face folder's files).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path, PurePosixPath

from aws_cdk import Aws
from aws_cdk import aws_iam as iam

from triton_mme.catalog import Catalog, CatalogError
from triton_mme.catalog.checkpoints import CheckpointError, CheckpointKind, local_folder_files
from triton_mme.catalog.lock import lock_path
from triton_mme.core.errors import quoted


def shipped_checkpoints(catalog: Catalog, catalog_file: Path) -> dict[str, Path]:
    """Asset path -> local file for every local checkpoint file the build reads, and the lock file."""
    files: dict[str, Path] = {}
    lock = lock_path(catalog_file)
    if lock.is_file():
        files[lock.name] = lock
    for relative_labels in sorted(set(catalog.label_files.values())):
        files[PurePosixPath(relative_labels).as_posix()] = catalog.base_dir / relative_labels
    for entry in catalog.checkpoints:
        location = entry.checkpoint_location
        if location.is_s3:
            continue
        relative = PurePosixPath(location.text.rstrip("/"))
        if relative.is_absolute() or ".." in relative.parts:
            raise CatalogError(
                f"model {quoted(entry.name)}: source: {location.text} lies outside the catalog's folder, so "
                "it cannot travel to the build runner; allowed: a path inside that folder, or s3://..."
            )
        try:
            path = location.local_path(catalog.base_dir)
        except CheckpointError as error:
            raise CatalogError(f"model {quoted(entry.name)}: source: {error}") from None
        kind = entry.checkpoint_kind
        if kind is not None and kind.is_file:
            files[relative.as_posix()] = path
        else:
            for name, file in local_folder_files(path).items():
                files[(relative / name).as_posix()] = file
    return files


def _object_arn(bucket: str, key: str) -> str:
    return f"arn:{Aws.PARTITION}:s3:::{bucket}/{key}"


def checkpoint_read_statements(catalog: Catalog) -> list[iam.PolicyStatement]:
    """GetObject on the catalog's S3 checkpoints (collapsed per shared folder) and ListBucket on the folder
    prefixes the build lists; none for a catalog without S3 checkpoints."""
    by_folder: dict[tuple[str, str], list[tuple[str, bool]]] = defaultdict(list)
    for entry in catalog.checkpoints:
        location = entry.checkpoint_location
        if not location.is_s3:
            continue
        key = location.key.rstrip("/")
        parent = key.rpartition("/")[0]
        by_folder[(location.bucket, f"{parent}/" if parent else "")].append(
            (location.key, entry.checkpoint_kind is CheckpointKind.HF_FOLDER)
        )
    objects: set[str] = set()
    listed: dict[str, set[str]] = defaultdict(set)
    for (bucket, parent), keys in sorted(by_folder.items()):
        if len(keys) > 1 and parent:
            objects.add(_object_arn(bucket, f"{parent}*"))
        else:
            objects.update(_object_arn(bucket, f"{key}*" if folder else key) for key, folder in keys)
        for key, folder in keys:
            if folder:
                listed[bucket].add(f"{parent}*" if len(keys) > 1 and parent else key)
    if not objects:
        return []
    statements = [iam.PolicyStatement(actions=["s3:GetObject"], resources=sorted(objects))]
    for bucket, prefixes in sorted(listed.items()):
        statements.append(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}"],
                conditions={"StringLike": {"s3:prefix": sorted(prefixes)}},
            )
        )
    return statements

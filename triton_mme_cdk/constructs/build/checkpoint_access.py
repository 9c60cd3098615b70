"""What the build runner may read of the catalog's own S3 checkpoints, exactly (the local ones travel in its
source: triton_mme_cdk/catalog_files.py).

S3 checkpoints are granted by location: `s3:GetObject` on each state dict's key or folder's prefix, collapsed
to the common folder when several checkpoints share one (a family: the IAM policy stays far below its size
limit at thousands of models), and `s3:ListBucket` on the folder prefixes only (the build lists a Hugging
Face folder's files).
"""

from __future__ import annotations

from collections import defaultdict

from aws_cdk import Aws
from aws_cdk import aws_iam as iam

from triton_mme.catalog import Catalog
from triton_mme.catalog.checkpoints import CheckpointKind


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

"""A fanned-out stage's shards: which models each runner builds and checks, written by synthesis beside the
catalog in the runner's source (`shards.json`), read by `triton-mme build --shard` and the serving check."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from triton_mme.core.bounded import DocumentError, read_json
from triton_mme.core.errors import UserError

if TYPE_CHECKING:
    from triton_mme.catalog.schema import Catalog

SHARDS_FILE_NAME = "shards.json"
MAX_SHARDS_BYTES = 8 * 1024 * 1024


class ShardError(UserError, ValueError):
    """A shard file or index that cannot be used; one line."""


def shards_json(shards: Sequence[Sequence[str]]) -> str:
    return json.dumps({"shards": [list(shard) for shard in shards]}, indent=1) + "\n"


def read_shards(path: Path) -> list[list[str]]:
    try:
        data = read_json(path, max_bytes=MAX_SHARDS_BYTES)
    except DocumentError as error:
        raise ShardError(str(error)) from None
    shards = data.get("shards") if isinstance(data, dict) else None
    if not isinstance(shards, list) or not all(
        isinstance(shard, list) and shard and all(isinstance(name, str) for name in shard) for shard in shards
    ):
        raise ShardError(
            f'{path}: not a shard file; allowed: {{"shards": [[model names], ...]}} as synthesis writes it'
        )
    names = [name for shard in shards for name in shard]
    if len(set(names)) != len(names):
        raise ShardError(f"{path}: a model is in two shards")
    return shards


def read_shard(path: Path, index: int) -> list[str]:
    shards = read_shards(path)
    if not 0 <= index < len(shards):
        raise ShardError(f"shard {index}: {path} has {len(shards)} shards; allowed 0..{len(shards) - 1}")
    return shards[index]


def catalog_shard(catalog: Catalog, shard_file: Path | None, index: int | None) -> Catalog:
    """The catalog's models of shard `index` of `shard_file` (`--shard` and `--shard-file`), or the whole
    catalog when neither is given."""
    if (index is None) != (shard_file is None):
        raise ShardError("--shard and --shard-file go together; allowed: both, or neither")
    if shard_file is None or index is None:
        return catalog
    return catalog.subset(read_shard(shard_file, index))

"""The lock file beside a catalog (`models.yaml` -> `models.lock.yaml`): every checkpoint's pinned content.

`triton-mme lock` writes it (it lists the `variants: listed` families and hashes every checkpoint, in S3 too)
and it is committed beside the catalog; synthesis and the build read it and never write it. For each
checkpoint entry it records the source it was made from, its sha256 (catalog.checkpoints), its size and its
parameter count (from the safetensors headers), so synthesis can check memory and time for checkpoints it
cannot read (S3), and a changed checkpoint changes exactly its own entry's pin.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from triton_mme.core.bounded import DocumentError, load_yaml
from triton_mme.core.errors import UserError, describe_validation_error
from triton_mme.core.limits import MAX_CHECKPOINT_BYTES, MAX_CHECKPOINT_PARAMETERS

LOCK_SUFFIX = ".lock.yaml"
LOCK_VERSION = 1
MAX_LOCK_BYTES = 64 * 1024 * 1024
LOCK_HEADER = (
    "# Written by `triton-mme lock`: the pinned content of every checkpoint of the catalog beside it.\n"
    '# Commit it with the catalog; synthesis and the build read it (docs/catalog.md, "Lock file").\n'
)


class LockError(UserError, ValueError):
    """A lock file that cannot be used; one line."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CheckpointPin(_Frozen):
    """One checkpoint as it was locked."""

    source: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    size_bytes: Annotated[int, Field(ge=0, le=MAX_CHECKPOINT_BYTES, strict=True)]
    parameters: Annotated[int, Field(ge=0, le=MAX_CHECKPOINT_PARAMETERS, strict=True)]
    # S3 checkpoints: each object's ETag when it was hashed, by file name ("" for a single file), so
    # `make preflight` sees an object changed since the lock before any GPU minute, and `lock` skips the
    # download of an unchanged one.
    etags: dict[str, str] = Field(default_factory=dict)


class CatalogLock(_Frozen):
    version: int = LOCK_VERSION
    # The variants of each `variants: listed` family, sorted.
    families: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    checkpoints: dict[str, CheckpointPin] = Field(default_factory=dict)

    def to_yaml(self) -> str:
        data = self.model_dump(mode="json")
        data["families"] = {name: list(variants) for name, variants in sorted(self.families.items())}
        data["checkpoints"] = {
            name: pin.model_dump(mode="json", exclude_defaults=True)
            for name, pin in sorted(self.checkpoints.items())
        }
        return LOCK_HEADER + yaml.safe_dump(data, sort_keys=False, width=200)


def lock_path(catalog_path: Path) -> Path:
    """models.yaml -> models.lock.yaml, beside it."""
    return catalog_path.with_name(catalog_path.stem + LOCK_SUFFIX)


def read_lock(path: Path) -> CatalogLock | None:
    """The lock file, or None where there is none."""
    if not path.is_file():
        return None
    try:
        raw = load_yaml(path.read_bytes(), where=str(path), max_bytes=MAX_LOCK_BYTES)
    except DocumentError as error:
        raise LockError(str(error)) from None
    except yaml.YAMLError:
        raise LockError(f"{path}: not valid YAML; rewrite it with `triton-mme lock`") from None
    try:
        lock = CatalogLock.model_validate(raw or {})
    except ValidationError as error:
        raise LockError(
            f"{path}: {describe_validation_error(error)}; rewrite it with `triton-mme lock`"
        ) from None
    if lock.version != LOCK_VERSION:
        raise LockError(
            f"{path}: version {lock.version}; allowed {LOCK_VERSION} (rewrite it with `triton-mme lock`)"
        )
    return lock

"""A catalog as the app's composition loads it for the construct: validated, its checkpoints resolved offline
and pinned, and the local files its build reads (what the build runner ships beside the catalog file).

A local checkpoint travels in the runner's source asset at its path relative to the catalog (so it must lie
inside the catalog's folder), with the lock file beside the catalog: the asset's hash, and so the build's
fingerprint, changes exactly when one of them does. Only the files the build reads are shipped (a Hugging Face
folder's config, tokenizer and safetensors weights, core.checkpoints).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from triton_mme.catalog import Catalog, CatalogError, load_catalog
from triton_mme.catalog.checkpoints import CheckpointError, local_folder_files
from triton_mme.catalog.lock import lock_path
from triton_mme.core.errors import quoted
from triton_mme.sizing.offline_sources import check_sources


@dataclass(frozen=True, kw_only=True)
class CatalogFiles:
    """What the build runner ships of a catalog: the catalog file itself, at the root of its source under its
    own name, and the local files its entries read (checkpoints, `labels:` files, the lock file), by their
    path in that source."""

    catalog_file: Path
    shipped: Mapping[str, Path]


def load_build_catalog(path: str | Path) -> tuple[Catalog, CatalogFiles]:
    """The catalog at `path`, validated, every source resolved offline (torchvision's registry, the shipped
    configs, each checkpoint's headers and pinned content) so a typo, a changed checkpoint or a pickle stops
    here, and the files its build ships. CatalogError (one line) for the first problem."""
    path = Path(path)
    catalog = check_sources(load_catalog(path), origin=str(path))
    return catalog, CatalogFiles(catalog_file=path, shipped=shipped_checkpoints(catalog, path))


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

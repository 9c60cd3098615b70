"""Where each built archive is served, from the catalog: the multi-model endpoint, or an inference component
of its own for the format a `placement: dedicated` entry names (its other formats stay on the multi-model
endpoint). Applied to every record of a build, cached and kept ones too: placement is no part of the build's
cache key (catalog.schema SERVING_FIELDS), so a record from an earlier build may carry an older one."""

from __future__ import annotations

from collections.abc import Iterable

from triton_mme.catalog import Catalog, ModelEntry
from triton_mme.core.manifest import MULTI_MODEL, ArchiveRecord, ComponentPlacement, Placement


def placement_of(record: ArchiveRecord, entry: ModelEntry | None) -> Placement:
    """Where the catalog entry of the record (None: not in the catalog) serves it."""
    if entry is None or entry.dedicated is None or entry.dedicated_format is None:
        return MULTI_MODEL
    if entry.dedicated_format.value != record.format:
        return MULTI_MODEL
    return ComponentPlacement(min_copies=entry.dedicated.min_copies)


def placed(records: Iterable[ArchiveRecord], catalog: Catalog) -> list[ArchiveRecord]:
    """The records with the catalog's placement each (entries looked up once: catalogs hold thousands)."""
    entries = {entry.name: entry for entry in catalog.models}
    return [
        record.model_copy(update={"placement": placement_of(record, entries.get(record.name))})
        for record in records
    ]

"""A manifest's per-model index: what lets a client read one model's record, not the whole manifest.

The live manifest grows about 1.7 KB a model (17 MB at 10,000); an application resolving one name should not
download and validate all of it. Beside every manifest it publishes, the store writes two immutable objects
named by the manifest's sha256 (core.locations):

- `<sha256>.records.jsonl`: the manifest's archive records, one compact JSON line each, in manifest order;
- `<sha256>.index.json`: `{"manifest_sha256", "count", "models": {name: [[format, offset, length], ...]}}`,
  the byte range of each record in the records file (about 50 bytes a model).

A reader finds the live manifest's sha256 in its object metadata (a HEAD), reads the index, then one ranged
GET of the record. Both objects are written before the manifest that names them becomes readable, and only
after everything that manifest names is in the bucket, so an index never leads to a missing object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from triton_mme.core.bounded import DocumentError, load_json
from triton_mme.core.errors import UserError, describe_validation_error, first_line
from triton_mme.core.manifest import ArchiveRecord, Manifest
from triton_mme.core.suggest import known_formats, known_names

INDEX_SCHEMA_VERSION = 1
# 10,000 models at about 50 bytes each is 0.5 MB; a record is a few KB.
MAX_INDEX_BYTES = 16 * 1024 * 1024
MAX_RECORD_BYTES = 1024 * 1024


class ManifestIndexError(UserError, ValueError):
    """An index or a record that cannot be used; one line."""


@dataclass(frozen=True)
class IndexFiles:
    """The two objects published beside a manifest: the index and the records it points into."""

    index: bytes
    records: bytes


def index_files(manifest: Manifest) -> IndexFiles:
    """The index and records of `manifest` (deterministic: the same manifest gives the same bytes)."""
    lines: list[bytes] = []
    models: dict[str, list[list[Any]]] = {}
    offset = 0
    for record in manifest.archives:
        line = json.dumps(record.model_dump(mode="json"), sort_keys=True, separators=(",", ":")).encode()
        models.setdefault(record.name, []).append([record.format, offset, len(line)])
        lines.append(line + b"\n")
        offset += len(line) + 1
    document = {
        "schema_version": INDEX_SCHEMA_VERSION,
        "manifest_sha256": manifest.sha256,
        "count": len(manifest.archives),
        "models": models,
    }
    index = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return IndexFiles(index=index, records=b"".join(lines))


@dataclass(frozen=True)
class ManifestIndex:
    """A parsed index: where each model's records lie in the records file."""

    manifest_sha256: str
    models: dict[str, list[list[Any]]]
    where: str

    @classmethod
    def parse(cls, body: bytes, *, where: str, manifest_sha256: str) -> ManifestIndex:
        # Its size is bounded by the reader; no depth scan (core.bounded) on the hot path: the decoder's
        # own recursion limit refuses a deeply nested body, and the shape is checked below.
        try:
            document = json.loads(body)
        except (ValueError, RecursionError) as error:
            raise ManifestIndexError(f"{where}: not JSON ({first_line(error)})") from None
        if not isinstance(document, dict) or document.get("schema_version") != INDEX_SCHEMA_VERSION:
            raise ManifestIndexError(
                f"{where}: not a manifest index of schema version {INDEX_SCHEMA_VERSION}"
            )
        if document.get("manifest_sha256") != manifest_sha256:
            raise ManifestIndexError(
                f"{where}: indexes manifest {document.get('manifest_sha256')}, not {manifest_sha256}"
            )
        models = document.get("models")
        if not isinstance(models, dict):
            raise ManifestIndexError(f"{where}: 'models' is not an object of model names")
        return cls(manifest_sha256, models, where)

    def byte_range(self, name: str, format: str | None = None) -> tuple[int, int]:
        """(offset, length) of the record of `name` (in `format`, when the model has several); KeyError
        with one line, naming the closest few known models, like Manifest.find."""
        entries = self.models.get(name)
        matches = [e for e in entries or () if format is None or e[0] == format]
        wanted = f"'{name}'" + (f" in format '{format}'" if format else "")
        if not matches:
            known = known_formats(name, [str(e[0]) for e in entries or ()]) or known_names(
                name, self.models.keys()
            )
            raise KeyError(f"no archive for model {wanted} in the manifest; {known}")
        if len(matches) > 1:
            formats = ", ".join(str(e[0]) for e in matches)
            raise KeyError(f"model '{name}' has archives in several formats ({formats}); name one")
        entry = matches[0]
        if not (isinstance(entry[1], int) and isinstance(entry[2], int) and 0 < entry[2] <= MAX_RECORD_BYTES):
            raise ManifestIndexError(
                f"{self.where}: entry {entry!r} of model '{name}' is not [format, offset, length]"
            )
        return entry[1], entry[2]


def parse_record(body: bytes, *, where: str, name: str) -> ArchiveRecord:
    """One record read from a records file, validated like a manifest's; it must be the one asked for."""
    try:
        record = ArchiveRecord.model_validate(load_json(body, where=where, max_bytes=MAX_RECORD_BYTES))
    except DocumentError as error:
        raise ManifestIndexError(str(error)) from None
    except ValidationError as error:
        raise ManifestIndexError(f"{where}: {describe_validation_error(error, whole='record')}") from None
    if record.name != name:
        raise ManifestIndexError(f"{where}: the index points model '{name}' at the record of '{record.name}'")
    return record

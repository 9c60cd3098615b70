"""The incremental build cache: a record per (catalog entry, format, build code, library versions).

An unchanged entry maps to the same key, and a key whose archive is still in place with the recorded
sha256 is reused without exporting anything.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from triton_mme.archive_inspection import inspect_archive
from triton_mme.catalog import ModelEntry
from triton_mme.core.errors import UserError, first_line
from triton_mme.core.files import file_sha256, write_atomically
from triton_mme.core.formats import Format
from triton_mme.core.manifest import ArchiveRecord
from triton_mme.core.naming import COMPANION_NAME

CACHE_DIR_NAME = ".cache"
# Everything the build imports of this project: the shared core, the catalog, archive inspection, sizing
# (the sources it resolves, the shipped Hugging Face configs) and the build package itself (its exporters
# included). Other packages cannot change an archive.
BUILD_CODE_DIRS = tuple(
    Path(__file__).resolve().parents[1] / package
    for package in ("core", "catalog", "archive_inspection", "sizing", "model_build")
)
BUILD_CODE_SUFFIXES = (".py", ".json")
LIBRARIES = (
    "torch",
    "torchvision",
    "onnx",
    "onnxruntime",
    "transformers",
    "tritonclient",
    "protobuf",
    "numpy",
)


def build_code_files() -> list[Path]:
    """The source files whose bytes can change what the build produces."""
    files = []
    for directory in BUILD_CODE_DIRS:
        files += [
            path
            for path in directory.rglob("*")
            if path.suffix in BUILD_CODE_SUFFIXES and "__pycache__" not in path.parts
        ]
    return sorted(files)


def build_code_hash() -> str:
    digest = hashlib.sha256()
    root = BUILD_CODE_DIRS[0].parent
    for path in build_code_files():
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@cache
def builder_version() -> str:
    """What built an archive, for its provenance: the project's version and its build code's hash."""
    try:
        version = metadata.version("triton-mme-cdk")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"triton-mme {version} build-code {build_code_hash()[:16]}"


def library_versions() -> dict[str, str]:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def cache_key(entry: ModelEntry, fmt: Format, *, extra: dict[str, Any] | None = None) -> str:
    material = {
        "entry": entry.build_settings(),
        "format": fmt.value,
        "code": build_code_hash(),
        "libraries": library_versions(),
        "extra": extra or {},
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class BuildCache:
    """Records of archives built before, by cache key. A record is a hit only when it is earned (`lookup`):
    records come from the store's shared cache too (store.build_cache), written by other runners."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.directory = out_dir / CACHE_DIR_NAME

    def lookup(self, key: str, entry: ModelEntry, fmt: Format) -> ArchiveRecord | str | None:
        """The cached record of (entry, fmt) under `key`: None when there is none, and why it is a miss (one
        line) when it is not this entry's archive in this format from this source, pin and build code, or its
        archive is not in out_dir with the recorded content and passing the model check of `add`."""
        path = self.directory / f"{key}.json"
        if not path.is_file():
            return None
        try:
            record = ArchiveRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError:
            return "its record is not an archive record"
        problem = record_problem(record, entry, fmt)
        if problem:
            return problem
        archive = self.out_dir / record.target_model
        if not archive.is_file() or archive.stat().st_size != record.size_bytes:
            return f"its archive {record.target_model} is not here with the recorded size"
        if not companions_in_place(self.out_dir, record):
            return "a companion file of its record is not here with its content"
        if file_sha256(archive) != record.sha256:
            return f"its archive {record.target_model} holds other bytes than the record states"
        try:
            inspect_archive(archive, record=record)
        except UserError as error:
            return f"its archive fails the model check: {first_line(error)}"
        return record

    def store(self, key: str, record: ArchiveRecord) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        write_atomically(self.directory / f"{key}.json", record.model_dump_json(indent=2))


def record_problem(record: ArchiveRecord, entry: ModelEntry, fmt: Format) -> str | None:
    """Why a cache record is not (entry, fmt) built by this build code from the entry's source and pin; None
    when it is. The key alone proves nothing: a record is stored under whatever key its writer chose."""
    provenance = record.provenance
    expected = (entry.name, fmt.value, entry.source, entry.sha256, builder_version())
    found = (
        record.name,
        record.format,
        provenance.source if provenance else None,
        provenance.sha256 if provenance else None,
        provenance.builder if provenance else None,
    )
    for what, want, have in zip(
        ("model", "format", "source", "pin", "builder"), expected, found, strict=True
    ):
        if want != have:
            return f"its record names {what} {str(have)[:80]!r}, not {str(want)[:80]!r}"
    return None


def companions_in_place(out_dir: Path, record: ArchiveRecord) -> bool:
    """Every companion file of the record is in out_dir with the content its name promises."""
    for name in record.files.values():
        named = COMPANION_NAME.match(name)
        path = out_dir / name
        if named is None or not path.is_file() or not file_sha256(path).startswith(named["digest"]):
            return False
    return True

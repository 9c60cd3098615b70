"""The incremental build cache: a record per (catalog entry, format, build code, library versions).

An unchanged entry maps to the same key, and a key whose archive is still in place with the recorded
sha256 is reused without exporting anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from model_build.catalog import Format, ModelEntry
from model_build.manifest import ArchiveRecord
from model_build.packaging import file_sha256

CACHE_DIR_NAME = ".cache"
PACKAGE_DIR = Path(__file__).parent
# Code that decides archive contents; the publishing and command-line modules do not.
NOT_BUILD_CODE = {"upload.py", "store_cli.py", "cli.py", "__main__.py"}
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


def build_code_hash() -> str:
    digest = hashlib.sha256()
    files = [
        *PACKAGE_DIR.glob("*.py"),
        *PACKAGE_DIR.glob("exporters/*.py"),
        *PACKAGE_DIR.glob("hf_configs/*.json"),
    ]
    for path in sorted(files):
        if path.name in NOT_BUILD_CODE:
            continue
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


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
        "entry": entry.model_dump(mode="json"),
        "format": fmt.value,
        "code": build_code_hash(),
        "libraries": library_versions(),
        "extra": extra or {},
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class BuildCache:
    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.directory = out_dir / CACHE_DIR_NAME

    def lookup(self, key: str) -> ArchiveRecord | None:
        """The cached record, only when its archive is still in out_dir with the recorded content."""
        path = self.directory / f"{key}.json"
        if not path.is_file():
            return None
        try:
            record = ArchiveRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError:
            return None
        archive = self.out_dir / record.target_model
        if not archive.is_file() or archive.stat().st_size != record.size_bytes:
            return None
        return record if file_sha256(archive) == record.sha256 else None

    def store(self, key: str, record: ArchiveRecord) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        write_atomically(self.directory / f"{key}.json", record.model_dump_json(indent=2))


def write_atomically(path: Path, text: str) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise

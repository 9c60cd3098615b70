"""What `triton-mme lock` remembers between runs so that an unchanged local checkpoint is not hashed again.

Like git's index: for each local checkpoint, the size, modification time (ns) and inode of each of its
files when it was last pinned, with that pin. When every file still has them, the pin is reused (no read, no
hash, no parameter count); `lock --rehash` ignores the cache. The cache lives in
`build/lock-stat-cache.json` beside the catalog (never committed; deleting it only costs one full hash),
keyed by the checkpoint's resolved path and the catalog `source:` text.

A file modified within RACY_NS of the moment its pin was recorded could change again without its modification
time changing (a coarse file system clock): such an entry is not kept, so it is hashed the next time ("racy
git", git's Documentation/technical/racy-git.txt).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from triton_mme.catalog.checkpoints import CheckpointError, CheckpointKind, local_folder_files
from triton_mme.catalog.lock import CheckpointPin
from triton_mme.core.files import write_atomically

CACHE_VERSION = 1
CACHE_PATH = Path("build/lock-stat-cache.json")
RACY_NS = 2_000_000_000

Signature = list[list[Any]]


def signature(path: Path, kind: CheckpointKind) -> Signature | None:
    """[[name, size, mtime_ns, inode], ...] of the checkpoint's files ("" for a single file); None when one
    cannot be read or is refused (then it is pinned the ordinary way, which says what is wrong)."""
    try:
        files = {"": path} if kind.is_file else local_folder_files(path)
        stats = {name: p.stat() for name, p in files.items()}
    except (OSError, CheckpointError):
        return None
    return [[name, s.st_size, s.st_mtime_ns, s.st_ino] for name, s in sorted(stats.items())]


@dataclass
class StatCache:
    path: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    hits: int = 0

    @classmethod
    def beside(cls, catalog_path: Path) -> StatCache:
        path = catalog_path.resolve().parent / CACHE_PATH
        try:
            document = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return cls(path)
        if not isinstance(document, dict) or document.get("version") != CACHE_VERSION:
            return cls(path)
        entries = document.get("entries")
        return cls(path, entries if isinstance(entries, dict) else {})

    def pin(self, key: Path, source: str, now: Signature | None) -> CheckpointPin | None:
        """The pin recorded for `key` when its files still have the signature `now`, else None."""
        entry = self.entries.get(str(key))
        if now is None or not isinstance(entry, dict):
            return None
        if entry.get("source") != source or entry.get("files") != now:
            return None
        try:
            found = CheckpointPin.model_validate(entry.get("pin"))
        except ValidationError:
            return None
        self.hits += 1
        return found

    def record(self, key: Path, source: str, now: Signature | None, pin: CheckpointPin) -> None:
        if now is None:
            self.entries.pop(str(key), None)
            return
        self.entries[str(key)] = {"source": source, "files": now, "pin": pin.model_dump(mode="json")}

    def save(self) -> None:
        """Write the cache, without the entries too recent to trust (racy); a cache that cannot be written
        only costs a hash next time."""
        racy_after = time.time_ns() - RACY_NS
        kept = {
            key: entry
            for key, entry in sorted(self.entries.items())
            if all(isinstance(f, list) and len(f) == 4 and f[2] < racy_after for f in entry.get("files", []))
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, json.dumps({"version": CACHE_VERSION, "entries": kept}) + "\n")
        except OSError:
            pass

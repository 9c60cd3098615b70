"""Old assets out of the cloud assembly: `cdk.out` keeps every `asset.<hash>` a synthesis ever staged, so each
catalog change used to add a full copy of the local checkpoints. After a synthesis, the assets no asset
manifest of the new assembly names are removed (only `asset.*` entries directly in the output folder)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

ASSET_PREFIX = "asset."


def referenced_assets(outdir: Path) -> set[str]:
    """The names of the `asset.*` entries that the assembly's asset manifests (nested ones too) name."""
    names: set[str] = set()
    for manifest in outdir.rglob("*.assets.json"):
        document: Any = json.loads(manifest.read_text(encoding="utf-8"))
        for kind in ("files", "dockerImages"):
            for asset in (document.get(kind) or {}).values():
                source = asset.get("source") or {}
                for key in ("path", "directory"):
                    if isinstance(source.get(key), str):
                        names.add(Path(source[key]).name)
    return names


def remove_stale_assets(outdir: Path) -> list[str]:
    """Remove the output folder's assets the current assembly does not use; the names removed."""
    keep = referenced_assets(outdir)
    removed = []
    for entry in sorted(outdir.iterdir()):
        if not entry.name.startswith(ASSET_PREFIX) or entry.name in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
        removed.append(entry.name)
    return removed

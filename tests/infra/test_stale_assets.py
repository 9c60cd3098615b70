"""Old assets do not pile up in cdk.out: after a synthesis only the assets its manifests name are kept."""

from __future__ import annotations

import json
from pathlib import Path

from triton_mme_cdk.stale_assets import remove_stale_assets


def test_assets_of_earlier_syntheses_are_removed_and_current_ones_kept(tmp_path: Path) -> None:
    for name in ("asset.new", "asset.old", "asset.nested"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "checkpoint.safetensors").write_bytes(b"x" * 1000)
    (tmp_path / "asset.old.tar.gz").write_bytes(b"y")
    (tmp_path / "Stack.template.json").write_text("{}")
    files = {"a": {"source": {"path": "asset.new", "packaging": "zip"}}}
    (tmp_path / "Stack.assets.json").write_text(json.dumps({"version": "1", "files": files}))
    stage = tmp_path / "assembly-Stage"
    stage.mkdir()
    nested = {"b": {"source": {"path": "../asset.nested"}}}
    (stage / "Inner.assets.json").write_text(json.dumps({"version": "1", "files": nested}))
    assert remove_stale_assets(tmp_path) == ["asset.old", "asset.old.tar.gz"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "Stack.assets.json",
        "Stack.template.json",
        "assembly-Stage",
        "asset.nested",
        "asset.new",
    ]

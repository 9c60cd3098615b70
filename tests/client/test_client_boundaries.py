"""The client is what application teams install: a request from a picture needs no deep-learning library."""

from __future__ import annotations

from pathlib import Path

from boundaries import FORBIDDEN_IN_CLIENT, loaded_after


def test_an_image_request_through_the_client_never_imports_a_deep_learning_library(
    manifest_path: Path, image_path: Path, tmp_path: Path
) -> None:
    argv = [
        "invoke", "--dry-run", str(tmp_path / "request"), "--model", "resnet50",
        "--manifest", str(manifest_path), "--image", str(image_path),
    ]  # fmt: skip
    loaded = loaded_after(f"from triton_mme.cli import main\nassert main({argv!r}) == 0")
    assert (tmp_path / "request" / "body.bin").stat().st_size > 600_000
    assert loaded.isdisjoint(FORBIDDEN_IN_CLIENT), sorted(loaded & set(FORBIDDEN_IN_CLIENT))

"""core.files: a file's digest read through one buffer equals hashlib's over the whole content."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from triton_mme.core import files


@pytest.mark.parametrize("size", [0, 1, 4096, 3 * 4096 - 1, 3 * 4096, 3 * 4096 + 1, 10 * 4096 + 7])
def test_the_digest_is_the_contents_across_chunk_boundaries(
    size: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "_CHUNK", 3 * 4096)  # several chunks, a short last one, none at all
    content = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    path = tmp_path / "f"
    path.write_bytes(content)
    assert files.file_sha256(path) == hashlib.sha256(content).hexdigest()

"""`triton-mme lock` and `lock --check` hash a local checkpoint again only when its files changed (size,
modification time, inode), like git's index; `--rehash` hashes every one; a pin the catalog contradicts is
still refused when it comes from the cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.checkpoints import write_state_dicts
from triton_mme.catalog import CatalogError
from triton_mme.cli import main
from triton_mme.model_build import lock
from triton_mme.model_build.lock import write_lock
from triton_mme.model_build.lock_stat_cache import CACHE_PATH

FAMILY = {
    "family": "vision",
    "architecture": "torchvision:squeezenet1_1",
    "formats": ["onnx"],
    "max_batch_size": 2,
    "input_shape": [3, 32, 32],
    "source": "checkpoint:checkpoints/{variant}.safetensors",
    "variants": "listed",
}
AN_HOUR_AGO_NS = 3600 * 10**9


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("stat-cache-checkpoints")
    write_state_dicts(folder, 3)
    return folder


def age(path: Path, by_ns: int = AN_HOUR_AGO_NS) -> None:
    """As if written long ago: a file written within the last seconds is never trusted from the cache."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns - by_ns, stat.st_mtime_ns - by_ns))


@pytest.fixture
def project(checkpoints: Path, tmp_path: Path) -> Path:
    shutil.copytree(checkpoints, tmp_path / "checkpoints")
    for path in (tmp_path / "checkpoints").iterdir():
        age(path)
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": [FAMILY]}))
    return tmp_path


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The entries `lock` reads and hashes."""
    seen: list[str] = []
    original = lock.local_pin

    def counted(entry: Any, base_dir: Path) -> Any:
        seen.append(entry.name)
        return original(entry, base_dir)

    monkeypatch.setattr(lock, "local_pin", counted)
    return seen


def test_an_unchanged_checkpoint_is_not_hashed_again(project: Path, pinned: list[str]) -> None:
    first = write_lock(project / "models.yaml")
    assert len(pinned) == 3 and (project / CACHE_PATH).is_file()
    again = write_lock(project / "models.yaml", check_only=True)
    assert len(pinned) == 3 and again.changed == () and again.lock == first.lock
    write_lock(project / "models.yaml", check_only=True, rehash=True)
    assert len(pinned) == 6


def test_a_changed_checkpoint_is_hashed_and_reported(project: Path, pinned: list[str]) -> None:
    first = write_lock(project / "models.yaml")
    changed = sorted((project / "checkpoints").iterdir())[1]
    data = bytearray(changed.read_bytes())
    data[-1] ^= 1  # same size, other content
    changed.write_bytes(bytes(data))
    age(changed, AN_HOUR_AGO_NS // 2)
    result = write_lock(project / "models.yaml", check_only=True)
    assert pinned[3:] == [f"vision-{changed.stem}"]
    assert result.changed == (f"vision-{changed.stem}",)
    assert (
        result.lock.checkpoints[f"vision-{changed.stem}"].sha256
        != first.lock.checkpoints[f"vision-{changed.stem}"].sha256
    )


def test_a_file_written_moments_ago_is_not_trusted_from_the_cache(project: Path, pinned: list[str]) -> None:
    recent = sorted((project / "checkpoints").iterdir())[0]
    recent.touch()
    write_lock(project / "models.yaml")
    write_lock(project / "models.yaml", check_only=True)
    assert pinned.count(f"vision-{recent.stem}") == 2 and len(pinned) == 4


def test_a_catalog_sha256_that_contradicts_a_cached_pin_is_refused(project: Path, pinned: list[str]) -> None:
    write_lock(project / "models.yaml")
    first = sorted((project / "checkpoints").iterdir())[0].name
    single = {key: value for key, value in FAMILY.items() if key not in ("family", "variants", "source")}
    single |= {"name": "own", "source": f"checkpoint:checkpoints/{first}", "sha256": "0" * 64}
    (project / "models.yaml").write_text(yaml.safe_dump({"models": [single]}))
    with pytest.raises(CatalogError, match=r"sha256: 0000000000000000… in the catalog is not its checkpoint"):
        write_lock(project / "models.yaml", check_only=True)
    assert len(pinned) == 3  # its pin came from the cache (a variant's source is the file's), still checked


def test_the_command_takes_rehash(
    project: Path, pinned: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lock", "--catalog", str(project / "models.yaml")]) == 0
    assert main(["lock", "--catalog", str(project / "models.yaml"), "--check", "--rehash"]) == 0
    assert "up to date (3 checkpoints)" in capsys.readouterr().out
    assert len(pinned) == 6

"""What `pip install .` puts into site-packages: the two product packages and their data, never the
benchmark suite (a top-level `benchmarks` would collide with any other distribution's)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("triton_mme", "triton_mme_cdk", "benchmarks")


def _wheel_files(tmp_path: Path) -> list[str]:
    """The file list of the wheel pip builds from this working tree: offline, with the environment's
    setuptools (the build backend pyproject.toml pins), in a copy so the checkout gets no build/ folder."""
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(REPO_ROOT / "pyproject.toml", source)
    for package in SOURCES:
        shutil.copytree(
            REPO_ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "results")
        )
    built = tmp_path / "wheel"
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check"),
            *("--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", str(built), str(source)),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = built.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_installs_the_product_packages_and_no_benchmarks(tmp_path: Path) -> None:
    files = _wheel_files(tmp_path)
    top_level = {name.split("/", 1)[0] for name in files if not name.split("/", 1)[0].endswith(".dist-info")}
    assert top_level == {"triton_mme", "triton_mme_cdk"}
    assert not [name for name in files if name.startswith("benchmarks")]
    # the package data the runners, synthesis and the planner read travels with the code
    sizing = ("assumptions.yaml", "torchvision_models.txt", "torchvision_state_dicts.json", "hf_configs/")
    assert [
        data for data in sizing if not any(name.startswith(f"triton_mme/sizing/{data}") for name in files)
    ] == []
    assert any(name.startswith("triton_mme/core/platform_data/") for name in files)
    assert any(name.startswith("triton_mme_cdk/runner_requirements/") for name in files)
    assert [name for name in files if name.endswith(".dist-info/entry_points.txt")], "the triton-mme command"

"""A runner's source asset holds exactly the paths it ships, wherever the project lies."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest

from triton_mme_cdk.constructs.build.runner_source import runner_source


def project(root: Path) -> Path:
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "pkg" / "tests").mkdir()
    (root / "pkg" / "module.py").write_text("VALUE = 1\n")
    (root / "pkg" / "__pycache__" / "module.cpython-311.pyc").write_bytes(b"\0")
    (root / "pkg" / "tests" / "test_module.py").write_text("")
    (root / "other.py").write_text("")
    (root / "requirements.txt").write_text("numpy==1.26.4\n")
    return root


def staged(root: Path, outdir: Path, paths: tuple[str, ...]) -> tuple[set[str], str]:
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Runner")
    asset = runner_source(stack, "Source", files={path: root / path for path in paths})
    app.synth()
    folder = outdir / f"asset.{asset.asset_hash}"
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}, asset.asset_hash


@pytest.mark.parametrize("folder_name", ["project", "tmp.X1y2Z3", "my.project.v2"])
def test_the_asset_holds_the_shipped_paths_only_even_in_a_folder_with_a_dot(
    tmp_path: Path, folder_name: str
) -> None:
    root = project(tmp_path / folder_name)
    files, _ = staged(root, tmp_path / "out", ("pkg", "requirements.txt"))
    assert files == {"pkg/module.py", "requirements.txt"}


def test_the_hash_follows_the_content_not_the_folder(tmp_path: Path) -> None:
    first = staged(project(tmp_path / "a"), tmp_path / "out-a", ("pkg", "requirements.txt"))[1]
    second = staged(project(tmp_path / "b.c"), tmp_path / "out-b", ("pkg", "requirements.txt"))[1]
    (tmp_path / "b.c" / "pkg" / "module.py").write_text("VALUE = 2\n")
    changed = staged(tmp_path / "b.c", tmp_path / "out-c", ("pkg", "requirements.txt"))[1]
    assert first == second != changed


def test_a_missing_source_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path / "project")
    with pytest.raises(
        ValueError, match=r"^runner source missing\.py is not a file or folder: .* does not exist$"
    ):
        staged(root, tmp_path / "out", ("missing.py",))


@pytest.mark.parametrize("path", ["../outside", "/etc/hostname"])
def test_an_asset_path_that_leaves_the_asset_is_refused(tmp_path: Path, path: str) -> None:
    root = project(tmp_path / "project")
    with pytest.raises(ValueError, match=r"^runner source \S+ leaves the asset; allowed: a relative path"):
        staged(root, tmp_path / "out", (path,))


def test_a_source_from_anywhere_lands_at_its_asset_path(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "team.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text("models: []\n")
    app = cdk.App(outdir=str(tmp_path / "out"))
    asset = runner_source(cdk.Stack(app, "Runner"), "Source", files={"models.yaml": elsewhere})
    app.synth()
    assert (tmp_path / "out" / f"asset.{asset.asset_hash}" / "models.yaml").read_text() == "models: []\n"


def test_the_assembly_holds_the_shipped_files_once(tmp_path: Path) -> None:
    root = project(tmp_path / "project")
    outdir = tmp_path / "out"
    _, asset_hash = staged(root, outdir, ("pkg", "requirements.txt"))
    copies = [p for p in outdir.rglob("module.py")]
    assert copies == [outdir / f"asset.{asset_hash}" / "pkg" / "module.py"]
    assert not (outdir / "runner-sources").exists() or not any((outdir / "runner-sources").rglob("*.py"))

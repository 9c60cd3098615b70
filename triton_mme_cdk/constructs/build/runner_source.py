"""The source asset of a CodeBuild runner: exactly the files it runs, copied into a folder of their own.

The files are copied into `<cloud assembly>/runner-sources/<construct id>/` and that folder becomes the asset,
with no exclude patterns. CDK's own route (the project root with `*` excluded and the shipped paths
re-included) stages an empty asset when the project's folder name has a dot in it (`git clone` into
`mktemp -d`'s `tmp.XXXX`) while hashing the files it should hold, so a build would start with no code.

The files are hard-linked there where the file system allows (copied otherwise), and the folder is removed
once CDK staged the asset (`asset.<hash>/`), so the cloud assembly holds the runner's files once: a family of
local checkpoints (1,000 of 2.9 MB each) would otherwise be in it twice.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from aws_cdk import Names, Stage
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

# Never shipped: byte code and tests inside a shipped package.
LEFT_OUT = ("__pycache__", "*.pyc", "tests")


def runner_source(
    scope: Construct, construct_id: str, *, files: Mapping[str, Path | bytes]
) -> s3_assets.Asset:
    """An asset holding each source of `files` (a file or a package folder, anywhere on disk, or the bytes of
    a file synthesis writes) at its asset path; ValueError naming a source that is missing or an asset path
    that leaves the asset."""
    stage = Stage.of(scope)
    outdir = Path(stage.outdir if stage is not None else "cdk.out")
    folder = outdir / "runner-sources" / Names.unique_id(scope)
    shutil.rmtree(folder, ignore_errors=True)
    for relative, source in files.items():
        if Path(relative).is_absolute() or ".." in Path(relative).parts:
            raise ValueError(f"runner source {relative} leaves the asset; allowed: a relative path inside it")
        target = folder / relative
        if isinstance(source, bytes):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source)
            continue
        if not source.exists():
            raise ValueError(f"runner source {relative} is not a file or folder: {source} does not exist")
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(
                source, target, ignore=shutil.ignore_patterns(*LEFT_OUT), copy_function=_link_or_copy
            )
        else:
            _link_or_copy(str(source), str(target))
    asset = s3_assets.Asset(scope, construct_id, path=str(folder))
    staged = outdir / asset.asset_path
    if staged.resolve() != folder.resolve() and staged.is_dir():
        shutil.rmtree(folder)  # CDK's staged copy is what the assembly ships
    return asset


def _link_or_copy(source: str, target: str) -> str:
    """A hard link of `source` (no bytes copied), or a copy where links are not possible (another file
    system, a file system without them)."""
    try:
        os.link(source, target, follow_symlinks=True)
    except OSError:
        shutil.copy2(source, target)
    return target

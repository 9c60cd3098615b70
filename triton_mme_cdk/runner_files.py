"""Where the files a GPU runner ships come from: the installed `triton_mme` package (a checkout or
site-packages) and the runner pins, package data of triton_mme_cdk. Found from the installed packages, not
from a checkout, so the constructs work from another project's CDK app; the catalog comes from anywhere."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import triton_mme
import triton_mme_cdk

# The folders that hold the `triton_mme` and `triton_mme_cdk` packages: the project checkout, or
# site-packages.
PACKAGE_ROOTS = {
    "triton_mme": Path(triton_mme.__file__).resolve().parent.parent,
    "triton_mme_cdk": Path(triton_mme_cdk.__file__).resolve().parent.parent,
}
REQUIREMENTS_DIR = Path(str(resources.files("triton_mme_cdk.runner_requirements")))


def shipped_files(paths: Sequence[str], *, root: Path | None = None) -> dict[str, Path]:
    """Asset path -> source for each of `paths` (a file or folder of `triton_mme/` or `triton_mme_cdk/`, or a
    `requirements-*.txt` pin file), from the installed packages, or all from `root` when given (a folder laid
    out as the asset is)."""
    files: dict[str, Path] = {}
    for path in paths:
        package = path.split("/")[0]
        if root is not None:
            files[path] = root / path
        elif package in PACKAGE_ROOTS:
            files[path] = PACKAGE_ROOTS[package] / path
        else:
            files[path] = REQUIREMENTS_DIR / path
    return files

"""The shape of the code: which job package may use which, and what the light packages never import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from boundaries import FORBIDDEN_IN_CORE, loaded_after

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE_ROOT = REPO_ROOT / "triton_mme"
# Each job package and the packages of ours it may import (through their public names only).
ALLOWED = {
    "core": set(),
    "model_build": {"core"},
    "store": {"core", "model_build"},
    "client": {"core"},
    "local_triton": {"core", "client"},
    # client for the request payloads, local_triton for the offline target (imported only when used).
    "serving_check": {"core", "client", "local_triton"},
    "planner": {"core", "client"},
    "loadtest": {"core", "client", "planner"},
    # client for the manifest, golden replay and InvokeEndpoint.
    "acceptance": {"core", "client"},
    "observability": {"core"},
}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) for every import of triton_mme in a file, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("triton_mme"):
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("triton_mme")]
    return found


def test_every_job_package_is_listed() -> None:
    packages = {p.name for p in PACKAGE_ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(ALLOWED)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_packages_depend_one_way_and_only_on_public_names(package: str) -> None:
    for path in (PACKAGE_ROOT / package).rglob("*.py"):
        for module, names in _imports(path):
            parts = module.split(".")
            used = parts[1] if len(parts) > 1 else None
            if used in (None, "cli", package):
                continue
            where = f"{path.relative_to(REPO_ROOT)} imports {module}"
            assert used in ALLOWED[package], f"{where}: {package} may use only {sorted(ALLOWED[package])}"
            private = [name for name in names if name.startswith("_")]
            assert not any(part.startswith("_") for part in parts) and not private, f"{where}: private names"


def test_the_core_imports_neither_torch_nor_boto3() -> None:
    modules = " ".join(p.stem for p in (PACKAGE_ROOT / "core").glob("*.py") if p.stem != "__init__")
    loaded = loaded_after(f"from triton_mme.core import {modules.replace(' ', ', ')}")
    assert loaded.isdisjoint(FORBIDDEN_IN_CORE), sorted(loaded & set(FORBIDDEN_IN_CORE))


def test_the_command_line_starts_without_a_deep_learning_library() -> None:
    loaded = loaded_after("from triton_mme.cli import parser\nparser()")
    assert loaded.isdisjoint({*FORBIDDEN_IN_CORE, "boto3"}), sorted(loaded & set(FORBIDDEN_IN_CORE))

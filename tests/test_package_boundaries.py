"""The shape of the code: which job package may use which, and what the light packages never import; both
installed packages (triton_mme, triton_mme_cdk) against the table in docs/architecture.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from boundaries import FORBIDDEN_IN_CORE, loaded_after

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE_ROOT = REPO_ROOT / "triton_mme"
CDK_ROOT = REPO_ROOT / "triton_mme_cdk"
ARCHITECTURE = REPO_ROOT / "docs" / "architecture.md"
# Each job package and the packages of ours it may import (through their public names only).
ALLOWED = {
    "core": set(),
    "catalog": {"core"},
    "archive_inspection": {"core"},
    # What is known of a catalog before its build, for synthesis, the build and the planner alike.
    "sizing": {"core", "catalog"},
    "model_build": {"core", "catalog", "archive_inspection", "sizing"},
    "store": {"core", "catalog", "archive_inspection", "model_build"},
    "client": {"core"},
    "local_triton": {"core", "archive_inspection", "client"},
    # client for the request payloads, local_triton for the offline target (imported only when used).
    "serving_check": {"core", "archive_inspection", "client", "local_triton"},
    "planner": {"core", "catalog", "client", "sizing"},
    "loadtest": {"core", "client", "planner"},
    # client for the manifest, golden replay and InvokeEndpoint.
    "acceptance": {"core", "client"},
    "observability": {"core"},
}
# What the construct library imports of triton_mme, each edge for its reason (the table in
# docs/architecture.md lists the same); a new one fails below.
CDK_ALLOWED = {
    "triton_mme",  # the package itself, for where its files are (runner_files: what a GPU runner ships)
    "core",  # naming, locations, platform facts
    "catalog",  # synthesis reads models.yaml and pins its checkpoints
    "sizing",  # the catalog's sources checked offline, its build's memory and time, a dedicated model's size
    "acceptance.stack",  # the name of the stack output `triton-mme acceptance` reads: its reader's
    "observability.triton_log",  # the parser the log reader function runs (shipped in its Lambda asset)
}
# Packages the construct library may use whole: leaves that import only the core and the catalog, or
# nothing of ours.
CDK_WHOLE_PACKAGES = {"core", "catalog", "sizing"}
# Packages others use through the package itself (its __init__), never through its modules.
ENTRY_ONLY = {"archive_inspection"}
# What the store, the local Triton and the serving check may import of archive inspection: its one entry and
# the types of its results and errors (the build also uses its operator lists and its output check).
ENTRY_CALLERS = {"store", "local_triton", "serving_check"}
ARCHIVE_ENTRY = {"inspect_archive", "ArchiveContents", "ExtractedArchive", "ArchiveError"}
FORBIDDEN_IN_SIZING = (*FORBIDDEN_IN_CORE, "onnx", "numpy")
# The one place triton_mme reaches triton_mme_cdk: the plan command imports the app's reader of a checkout's
# settings (where triton_mme_cdk is installed) and passes it to the planner, which imports nothing of the app.
REACHES_THE_CDK_LIBRARY = {"triton_mme/planner/commands.py": {"triton_mme_cdk.stack_plan", "triton_mme_cdk"}}
# Nothing loads a module by name, which the import walk cannot see, but inside its own package: the command
# line finds each package's `commands` module (a runner that ships some packages offers just theirs), and
# triton_mme_cdk's public names load on first use (`import triton_mme_cdk.settings` starts no jsii process).
LOADS_BY_NAME = {"triton_mme/cli.py": "triton_mme", "triton_mme_cdk/__init__.py": "triton_mme_cdk"}
DYNAMIC_LOADERS = {"import_module", "__import__", "run_module", "run_path", "spec_from_file_location"}


def _is_triton_mme(module: str) -> bool:
    return module.split(".")[0] == "triton_mme"


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) for every import of triton_mme in a file, at any depth."""
    return _imports_in(path.read_text(encoding="utf-8"))


def _imports_in(source: str) -> list[tuple[str, list[str]]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and _is_triton_mme(node.module):
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if _is_triton_mme(a.name)]
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
            assert used != "cli", f"{path.relative_to(REPO_ROOT)} imports triton_mme.cli, which imports it"
            if used in (None, "arguments", package):
                continue
            where = f"{path.relative_to(REPO_ROOT)} imports {module}"
            assert used in ALLOWED[package], f"{where}: {package} may use only {sorted(ALLOWED[package])}"
            assert used not in ENTRY_ONLY or len(parts) == 2, f"{where}: allowed triton_mme.{used} itself"
            private = [name for name in names if name.startswith("_")]
            assert not any(part.startswith("_") for part in parts) and not private, f"{where}: private names"


def _beyond_the_entry(source: str) -> list[str]:
    """Each import in `source` of archive inspection that is more than ARCHIVE_ENTRY's names: another name,
    a module of it, or the package whole (`import triton_mme.archive_inspection`, `from triton_mme import
    archive_inspection`), through which any name is reached."""
    beyond = []
    for module, names in _imports_in(source):
        if module == "triton_mme" and "archive_inspection" in names:
            beyond.append("triton_mme.archive_inspection, whole")
        elif module == "triton_mme.archive_inspection" and names:
            beyond += [f"{module}.{name}" for name in names if name not in ARCHIVE_ENTRY]
        elif module.startswith("triton_mme.archive_inspection"):
            beyond.append(f"{module}, whole" if module == "triton_mme.archive_inspection" else module)
    return beyond


@pytest.mark.parametrize("package", sorted(ENTRY_CALLERS))
def test_the_store_local_triton_and_serving_check_use_only_the_archive_entry(package: str) -> None:
    for path in (PACKAGE_ROOT / package).rglob("*.py"):
        beyond = _beyond_the_entry(path.read_text(encoding="utf-8"))
        where = path.relative_to(REPO_ROOT)
        assert beyond == [], f"{where} imports {beyond}; allowed {sorted(ARCHIVE_ENTRY)}"


def test_every_name_of_the_archive_entry_is_used() -> None:
    used = {
        name
        for package in ENTRY_CALLERS
        for path in (PACKAGE_ROOT / package).rglob("*.py")
        for module, names in _imports(path)
        if module == "triton_mme.archive_inspection"
        for name in names
    }
    assert used == ARCHIVE_ENTRY, f"listed but no longer imported: {sorted(ARCHIVE_ENTRY - used)}"


def test_the_entry_rule_refuses_any_other_name_a_module_or_the_whole_package() -> None:
    source = """
from triton_mme.archive_inspection import ArchiveError, inspect_archive
from triton_mme.archive_inspection import read_archive
from triton_mme.archive_inspection.archive import ArchiveContents
import triton_mme.archive_inspection
from triton_mme import archive_inspection
def later():
    from triton_mme.archive_inspection import check_outputs
"""
    assert _beyond_the_entry(source) == [
        "triton_mme.archive_inspection.read_archive",
        "triton_mme.archive_inspection.archive",
        "triton_mme.archive_inspection, whole",
        "triton_mme.archive_inspection, whole",
        "triton_mme.archive_inspection.check_outputs",
    ]


@pytest.mark.parametrize("package", ["core", "catalog", "archive_inspection"])
def test_the_core_catalog_and_archive_inspection_import_neither_torch_nor_boto3(package: str) -> None:
    modules = ", ".join(p.stem for p in (PACKAGE_ROOT / package).glob("*.py") if p.stem != "__init__")
    loaded = loaded_after(f"from triton_mme.{package} import {modules}")
    assert loaded.isdisjoint(FORBIDDEN_IN_CORE), sorted(loaded & set(FORBIDDEN_IN_CORE))


def test_sizing_imports_no_deep_learning_library_numpy_nor_boto3() -> None:
    """Synthesis sizes a catalog with it: `cdk synth` must not load PyTorch, ONNX or numpy."""
    sizing = sorted((PACKAGE_ROOT / "sizing").glob("*.py"))
    modules = ", ".join(path.stem for path in sizing if path.stem != "__init__")
    loaded = loaded_after(f"from triton_mme.sizing import {modules}")
    assert "triton_mme.sizing.build_time" in loaded
    assert loaded.isdisjoint(FORBIDDEN_IN_SIZING), sorted(loaded & set(FORBIDDEN_IN_SIZING))


def test_the_command_line_starts_without_a_deep_learning_library() -> None:
    loaded = loaded_after("from triton_mme.cli import parser\nparser()")
    assert loaded.isdisjoint({*FORBIDDEN_IN_CORE, "boto3"}), sorted(loaded & set(FORBIDDEN_IN_CORE))


def _documented_imports() -> dict[str, set[str]]:
    """The "May import (of ours)" column of docs/architecture.md's package table: each package's backquoted
    names that are packages or modules of triton_mme (the rest of a cell explains)."""
    names = {p.name for p in PACKAGE_ROOT.iterdir() if (p / "__init__.py").is_file()}
    table = {}
    for row in re.findall(r"^\| `(triton_mme[\w.]*)` \|[^|]*\|([^|]*)\|", ARCHITECTURE.read_text(), re.M):
        package, cell = row
        quoted = {name.removeprefix("triton_mme.") for name in re.findall(r"`([\w.]+)`", cell)}
        table[package.removeprefix("triton_mme.")] = {
            name for name in quoted if name.split(".")[0] in names or name == "triton_mme"
        }
    return table


def test_the_architecture_table_lists_what_the_test_allows() -> None:
    assert _documented_imports() == {**ALLOWED, "triton_mme_cdk": CDK_ALLOWED}


def test_the_construct_library_imports_only_the_listed_modules_of_triton_mme() -> None:
    used = set()
    for path in CDK_ROOT.rglob("*.py"):
        for module, names in _imports(path):
            parts = module.split(".")
            if parts[0] != "triton_mme":
                continue  # triton_mme_cdk's own modules
            assert not any(p.startswith("_") for p in parts), f"{path} imports private {module}"
            assert not [n for n in names if n.startswith("_")], f"{path} imports private names of {module}"
            package = parts[1] if len(parts) > 1 else None
            edge = package if package in CDK_WHOLE_PACKAGES else ".".join(parts[1:3]) or "triton_mme"
            where = f"{path.relative_to(REPO_ROOT)} imports {module}"
            assert edge in CDK_ALLOWED, f"{where}: triton_mme_cdk may use only {sorted(CDK_ALLOWED)}"
            used.add(edge)
    assert used == CDK_ALLOWED, f"listed but no longer imported: {sorted(CDK_ALLOWED - used)}"


def _names_of_ours(path: Path, prefixes: tuple[str, ...]) -> list[str]:
    """Every import of a module starting with one of `prefixes`, and every string that names one."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and " " not in node.value:
            found.append(node.value)
    return [name for name in found if name.split(".")[0] in prefixes]


def test_triton_mme_reaches_the_construct_library_only_where_listed() -> None:
    found = {
        str(path.relative_to(REPO_ROOT)): set(names)
        for path in PACKAGE_ROOT.rglob("*.py")
        if (names := _names_of_ours(path, ("triton_mme_cdk",)))
    }
    assert found == REACHES_THE_CDK_LIBRARY


def _dynamic_loads(path: Path) -> list[int]:
    """The lines of every call that loads a module by name (importlib.import_module, __import__, runpy)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in DYNAMIC_LOADERS:
                lines.append(node.lineno)
    return lines


def test_no_module_loads_another_package_by_name() -> None:
    roots = (PACKAGE_ROOT, CDK_ROOT, REPO_ROOT / "benchmarks")
    paths = [REPO_ROOT / "app.py", *(path for root in roots for path in root.rglob("*.py"))]
    loads = {str(path.relative_to(REPO_ROOT)): lines for path in paths if (lines := _dynamic_loads(path))}
    assert sorted(loads) == sorted(LOADS_BY_NAME), f"loads by name, lines: {loads}"
    for file, package in LOADS_BY_NAME.items():
        named = _names_of_ours(REPO_ROOT / file, ("triton_mme", "triton_mme_cdk", "benchmarks"))
        assert {name.split(".")[0] for name in named} == {package}, f"{file} names {sorted(named)}"


def test_neither_installed_package_uses_the_benchmarks() -> None:
    """benchmarks/ is not installed (pyproject.toml): an import of it would fail outside a checkout."""
    for root in (PACKAGE_ROOT, CDK_ROOT):
        for path in root.rglob("*.py"):
            assert _names_of_ours(path, ("benchmarks",)) == [], path.relative_to(REPO_ROOT)

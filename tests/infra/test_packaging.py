"""`pip install triton-mme-cdk[cdk]` gives the construct library: the extra pins what requirements.txt pins,
and the files the runners ship are found in the installed packages (the runner pins are package data)."""

from __future__ import annotations

import tomllib

from synth_support import REPO_ROOT

from triton_mme_cdk.constructs.build.build_runner import SOURCE_FILES as BUILD_FILES
from triton_mme_cdk.constructs.build.serving_check import SOURCE_FILES as CHECK_FILES
from triton_mme_cdk.runner_files import REQUIREMENTS_DIR, shipped_files

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def pins(lines: list[str]) -> dict[str, str]:
    found = {}
    for line in lines:
        requirement = line.split("#")[0].strip()
        if "==" in requirement:
            name, version = requirement.split("==")
            found[name.strip().lower()] = version.strip()
    return found


def test_the_cdk_extra_pins_what_requirements_txt_pins() -> None:
    extra = pins(PYPROJECT["project"]["optional-dependencies"]["cdk"])
    app = pins((REPO_ROOT / "requirements.txt").read_text().splitlines())
    assert extra == app
    assert {"aws-cdk-lib", "constructs", "cdk-nag"} <= set(extra)


def test_the_runner_pins_are_package_data() -> None:
    package_data = PYPROJECT["tool"]["setuptools"]["package-data"]
    assert package_data["triton_mme_cdk.runner_requirements"] == ["*.txt"]
    assert REQUIREMENTS_DIR == REPO_ROOT / "triton_mme_cdk" / "runner_requirements"
    assert {p.name for p in REQUIREMENTS_DIR.glob("*.txt")} == {
        "requirements-build.txt",
        "requirements-check.txt",
        "requirements-uv.txt",
    }


def test_every_shipped_file_is_found_in_the_installed_packages() -> None:
    for paths in (BUILD_FILES, CHECK_FILES):
        files = shipped_files(paths)
        assert list(files) == list(paths)
        missing = [str(source) for source in files.values() if not source.exists()]
        assert missing == []

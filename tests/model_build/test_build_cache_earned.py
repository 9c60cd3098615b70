"""A build-cache hit is earned: a record counts only when it names the entry, its format, source, pin and this
build code, and its archive passes the model check of `add`; anything else is a miss, said in the build's
output, and the archive is built again (the build does not fail)."""

from __future__ import annotations

import json
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile_archives import custom_domain_onnx, named_by_content, write_layout

from triton_mme.catalog import Catalog
from triton_mme.core.files import file_sha256
from triton_mme.core.manifest import Manifest
from triton_mme.model_build.cache import CACHE_DIR_NAME
from triton_mme.model_build.pipeline import ArchiveOutcome, build_catalog, catalog_cache_keys

CNN = "tiny-cnn/onnx"


def record_path(runner: Path, catalog: Catalog, archive: str) -> Path:
    return runner / CACHE_DIR_NAME / f"{catalog_cache_keys(catalog)[archive]}.json"


def another_models_record(runner: Path, catalog: Catalog, record: dict[str, Any]) -> dict[str, Any]:
    return json.loads(record_path(runner, catalog, "tiny-roberta/onnx").read_text())


def another_pin(runner: Path, catalog: Catalog, record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "provenance": {**record["provenance"], "sha256": "f" * 64}}


def another_builder(runner: Path, catalog: Catalog, record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "provenance": {**record["provenance"], "builder": "triton-mme 0.0 build-code 0"}}


def another_source(runner: Path, catalog: Catalog, record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "provenance": {**record["provenance"], "source": "torchvision:resnet18"}}


def another_format(runner: Path, catalog: Catalog, record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "format": "torchscript"}


def refused_archive(runner: Path, catalog: Catalog, record: dict[str, Any]) -> dict[str, Any]:
    """An archive of the entry's name and format, named by its content, that the model check refuses."""
    with tarfile.open(runner / record["target_model"]) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("config.pbtxt"))
        stream = tar.extractfile(member)
        assert stream is not None
        config = stream.read()
    scratch = runner / "scratch.tar.gz"
    write_layout(scratch, config=config, model=custom_domain_onnx(), model_dir="tiny-cnn-onnx")
    archive = named_by_content(scratch, "tiny-cnn", "onnx")
    return {**record, "target_model": archive.name, "sha256": file_sha256(archive),
            "size_bytes": archive.stat().st_size}  # fmt: skip


@pytest.mark.parametrize(
    ("poison", "reason"),
    [
        (another_models_record, "its record names model 'tiny-roberta', not 'tiny-cnn'"),
        (another_pin, "its record names pin 'ffff"),
        (another_builder, "its record names builder 'triton-mme 0.0 build-code 0'"),
        (another_source, "its record names source 'torchvision:resnet18', not 'torchvision:squeezenet1_1'"),
        (another_format, "its record names format 'torchscript', not 'onnx'"),
        (refused_archive, "its archive fails the model check:"),
    ],
)
def test_an_unearned_record_is_a_miss_said_in_the_output_and_rebuilt(
    built: tuple[Path, Manifest],
    tiny_catalog: Catalog,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    poison: Callable[[Path, Catalog, dict[str, Any]], dict[str, Any]],
    reason: str,
) -> None:
    runner = tmp_path / "runner"
    shutil.copytree(built[0], runner)
    path = record_path(runner, tiny_catalog, CNN)
    path.write_text(json.dumps(poison(runner, tiny_catalog, json.loads(path.read_text()))))
    outcomes: list[ArchiveOutcome] = []
    manifest = build_catalog(tiny_catalog, runner, progress=True, on_archive=outcomes.append, only="tiny-cnn")
    assert sorted((o.record.name, o.record.format, o.cached) for o in outcomes) == [
        ("tiny-cnn", "onnx", False),
        ("tiny-cnn", "torchscript", True),
    ]
    err = capsys.readouterr().err
    assert f"{CNN}: build cache record not used ({reason}" in err and "); building it" in err
    names = {(record.name, record.format) for record in manifest.archives}
    assert ("tiny-cnn", "onnx") in names
    rebuilt = next(r for r in manifest.archives if (r.name, r.format) == ("tiny-cnn", "onnx"))
    assert (runner / rebuilt.target_model).is_file()

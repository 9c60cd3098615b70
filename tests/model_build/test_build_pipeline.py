"""The build: archives plus manifest, reproducible, incremental, and nothing half-written on failure."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from build_support import catalog_of, tiny_cnn, tiny_roberta

from triton_mme.archive_inspection.archive import extract_archive, read_archive
from triton_mme.catalog import Catalog
from triton_mme.core.files import file_sha256
from triton_mme.core.formats import Format, Weights
from triton_mme.core.golden import GOLDEN_ROWS, GoldenData
from triton_mme.core.manifest import MANIFEST_FILE_NAME, ComponentPlacement, Manifest
from triton_mme.core.tolerances import FP32
from triton_mme.core.triton_config import engine_cache_path
from triton_mme.model_build import pipeline as build_module
from triton_mme.model_build import runtimes
from triton_mme.model_build.exporters import onnx as onnx_exporter
from triton_mme.model_build.pipeline import ArchiveOutcome, BuildError, build_catalog


def _archives(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("*.tar.gz"))


def test_one_archive_per_model_and_format_and_a_manifest_naming_them(built: tuple[Path, Manifest]) -> None:
    out, manifest = built
    assert sorted((a.name, a.format) for a in manifest.archives) == [
        ("tiny-cnn", "onnx"),
        ("tiny-cnn", "torchscript"),
        ("tiny-roberta", "onnx"),
        ("tiny-roberta", "torchscript"),
    ]
    assert _archives(out) == sorted(manifest.target_models)
    assert Manifest.read(out / MANIFEST_FILE_NAME) == manifest
    assert not list(out.glob(".work-*")) and not list(out.glob(".partial-*"))
    for record in manifest.archives:
        contents = read_archive(out / record.target_model)
        assert contents.model_dir == f"{record.name}-{record.format}"
        assert contents.inputs == record.inputs and contents.outputs == record.outputs
        assert contents.config.max_batch_size == record.max_batch_size == 4
        assert record.details["parity"]["max_abs_error"]


@pytest.mark.slow
def test_two_builds_give_the_same_bytes(
    built: tuple[Path, Manifest], tiny_catalog: Catalog, tmp_path: Path
) -> None:
    out, manifest = built
    again = build_catalog(tiny_catalog, tmp_path, progress=False)
    assert again.target_models == manifest.target_models
    for name in again.target_models:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes()


def test_unchanged_rebuild_exports_nothing(
    built: tuple[Path, Manifest], tiny_catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, manifest = built

    def no_export(*_: object) -> None:
        raise AssertionError("an unchanged entry was exported again")

    monkeypatch.setattr(build_module, "_export_verified", no_export)
    monkeypatch.setattr("triton_mme.model_build.sources.load_model", no_export)
    outcomes: list[ArchiveOutcome] = []
    assert build_catalog(tiny_catalog, out, progress=False, on_archive=outcomes.append) == manifest
    assert len(outcomes) == 4 and all(o.cached for o in outcomes)


def test_a_changed_entry_is_rebuilt_under_a_new_name(built: tuple[Path, Manifest], tmp_path: Path) -> None:
    _, manifest = built
    changed = catalog_of(tiny_cnn(formats=["onnx"], max_batch_size=2))
    record = build_catalog(changed, tmp_path, progress=False).find("tiny-cnn", "onnx")
    assert record.target_model != manifest.find("tiny-cnn", "onnx").target_model


def test_failed_parity_leaves_no_archive_and_no_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_export = onnx_exporter.export_plain

    def tampered(loaded, path):  # type: ignore[no-untyped-def]
        from test_build_exporters import _scale_first_weight

        real_export(loaded, path)
        _scale_first_weight(path)
        return path

    monkeypatch.setattr(onnx_exporter, "export_plain", tampered)
    (tmp_path / MANIFEST_FILE_NAME).write_text("previous", encoding="utf-8")
    with pytest.raises(BuildError) as caught:
        build_catalog(catalog_of(tiny_cnn()), tmp_path, progress=False)
    message = str(caught.value)
    assert message.startswith(
        "1 of 2 archives failed; first: tiny-cnn/onnx: onnx batch 1: output 'output' differs"
    )
    assert "\n" not in message
    # The other format of the same model still built; the failed one left nothing; the manifest is untouched.
    assert [name.split("-")[2] for name in _archives(tmp_path)] == ["torchscript"]
    assert (tmp_path / MANIFEST_FILE_NAME).read_text(encoding="utf-8") == "previous"
    assert not list(tmp_path.glob(".work-*")) and not list(tmp_path.glob(".partial-*"))


@pytest.mark.slow
def test_only_and_skip_keep_earlier_archives_in_the_manifest(
    built: tuple[Path, Manifest], tmp_path: Path
) -> None:
    _, manifest = built
    catalog = catalog_of(tiny_cnn(), tiny_roberta())
    first = build_catalog(
        catalog, tmp_path, only="tiny-roberta", skip_formats=[Format.TORCHSCRIPT], progress=False
    )
    assert [(a.name, a.format) for a in first.archives] == [("tiny-roberta", "onnx")]
    second = build_catalog(catalog, tmp_path, only="tiny-cnn", progress=False)
    assert sorted((a.name, a.format) for a in second.archives) == [
        ("tiny-cnn", "onnx"), ("tiny-cnn", "torchscript"), ("tiny-roberta", "onnx"),
    ]  # fmt: skip
    assert second.target_models <= manifest.target_models


def test_leftovers_of_an_interrupted_build_are_removed(tmp_path: Path) -> None:
    (tmp_path / ".work-killed").mkdir()
    (tmp_path / ".work-killed" / "plain.onnx").write_bytes(b"half")
    (tmp_path / ".partial-x.tar.gz").write_bytes(b"half")
    manifest = build_catalog(
        catalog_of(tiny_cnn(formats=["onnx"], input_shape=[3, 32, 32])), tmp_path, progress=False
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".cache", *_archives(tmp_path), *manifest.files, MANIFEST_FILE_NAME]
    )


def test_weights_override_is_recorded(tmp_path: Path) -> None:
    catalog = catalog_of(tiny_cnn(weights="pretrained", formats=["onnx"], input_shape=[3, 32, 32]))
    record = build_catalog(catalog, tmp_path, weights_override=Weights.RANDOM, progress=False).archives[0]
    assert record.weights == "random"
    assert json.loads((tmp_path / MANIFEST_FILE_NAME).read_text())["archives"][0]["weights"] == "random"


def test_tensorrt_without_a_gpu_fails_fast_unless_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    catalog = catalog_of(tiny_cnn(formats=["onnx", "tensorrt"], input_shape=[3, 32, 32]))
    with pytest.raises(
        BuildError, match="format tensorrt needs a CUDA GPU and none is available; pass --skip-format"
    ):
        build_catalog(catalog, tmp_path / "a", progress=False)
    assert not (tmp_path / "a").exists()
    manifest = build_catalog(catalog, tmp_path / "b", skip_formats=[Format.TENSORRT], progress=False)
    assert [a.format for a in manifest.archives] == ["onnx"]


def test_image_models_record_their_preprocessing_and_labels_beside_the_manifest(
    built: tuple[Path, Manifest],
) -> None:
    out, manifest = built
    image = manifest.find("tiny-cnn", "onnx")
    assert image.preprocessing is not None and image.preprocessing.crop_size == (64, 64)
    # squeezenet1_1's ImageNet weights: 1000 class names, one file shared by both formats.
    labels = json.loads((out / image.files["labels"]).read_text(encoding="utf-8"))
    torchscript = manifest.find("tiny-cnn", "torchscript")
    assert len(labels) == 1000 and torchscript.files["labels"] == image.files["labels"]
    # A text model built with random weights records the offline stand-in tokenizer and its golden data.
    assert set(manifest.find("tiny-roberta", "onnx").files) == {"golden", "tokenizer"}


def test_every_archive_records_golden_data_that_its_own_runtime_reproduces(
    built: tuple[Path, Manifest], tmp_path: Path
) -> None:
    out, manifest = built
    for record in manifest.archives:
        golden = GoldenData.from_bytes((out / record.files["golden"]).read_bytes(), where=record.target_model)
        golden.check_against(record.inputs, record.outputs, where=record.target_model)
        assert golden.rows == GOLDEN_ROWS
        model_file = extract_archive(out / record.target_model, tmp_path / record.target_model).model_file
        if record.format == "onnx":
            produced = runtimes.run_onnx(runtimes.onnx_session(model_file), golden.inputs)
        else:
            produced = runtimes.run_torchscript(
                runtimes.load_torchscript(model_file),
                golden.inputs,
                [s.name for s in record.inputs],
                [s.name for s in record.outputs],
            )
        # PyTorch's outputs for the recorded inputs, under the archive's own tensor names.
        for name, expected in golden.outputs.items():
            np.testing.assert_allclose(produced[name], expected, atol=FP32.atol, rtol=FP32.rtol, err_msg=name)
    # Different archives of one model name their tensors differently, so their golden files differ.
    assert (
        manifest.find("tiny-cnn", "onnx").files["golden"]
        != manifest.find("tiny-cnn", "torchscript").files["golden"]
    )


def test_the_engine_cache_path_names_the_packaged_model_files_content(tmp_path: Path) -> None:
    """Retrained weights in the same graph get their own TensorRT engine cache on the endpoint."""
    accelerated = {"tensorrt_accelerator": {"enabled": True}}
    entry = catalog_of(tiny_cnn(formats=["onnx"], onnxruntime=accelerated)).models[0]
    record = build_module.build_archive(entry, Format.ONNX, tmp_path / "out")
    extracted = extract_archive(tmp_path / "out" / record.target_model, tmp_path / "x")
    (accelerator,) = extracted.contents.config.optimization.execution_accelerators.gpu_execution_accelerator
    model_sha256 = file_sha256(extracted.model_file)
    assert accelerator.parameters["trt_engine_cache_path"] == engine_cache_path("tiny-cnn-onnx", model_sha256)
    assert accelerator.parameters["trt_engine_cache_path"].endswith(f"/tiny-cnn-onnx-{model_sha256[:16]}")


@pytest.mark.slow
def test_progress_names_each_step_with_its_time_and_peak_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes: list[ArchiveOutcome] = []
    build_catalog(
        catalog_of(tiny_cnn(formats=["onnx"])), tmp_path, progress=False, on_archive=outcomes.append
    )
    lines = capsys.readouterr().err.splitlines()
    found = [re.match(r"^(\S+): (\w+) [\d.]+ s, peak ", line) for line in lines]
    steps = [f"{m[1]}: {m[2]}" for m in found if m]
    assert steps == [
        "tiny-cnn: load", "tiny-cnn: reference", "tiny-cnn/onnx: export", "tiny-cnn/onnx: optimise",
        "tiny-cnn/onnx: verify", "tiny-cnn/onnx: package",
    ]  # fmt: skip
    (outcome,) = outcomes
    assert outcome.peak_bytes is not None and outcome.peak_bytes > 0
    assert lines[-1].endswith(f"built in {outcome.seconds:.1f} s, peak {outcome.peak_bytes / 2**30:.2f} GiB)")


def test_the_catalog_places_each_archive_even_when_every_one_comes_from_the_cache(
    built: tuple[Path, Manifest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    shutil.copytree(built[0], out)
    monkeypatch.setattr(build_module, "_export_verified", lambda *_: pytest.fail("an archive was rebuilt"))
    dedicated = {"format": "torchscript", "copies": 1, "min_copies": 0, "max_copies": 2}
    catalog = catalog_of(tiny_cnn(placement="dedicated", dedicated=dedicated), tiny_roberta())
    manifest = build_catalog(catalog, out, progress=False)
    served = manifest.find("tiny-cnn", "torchscript")
    assert served.placement == ComponentPlacement(min_copies=0)
    # The entry's other format and the other entry stay on the multi-model endpoint.
    others = [r for r in manifest.archives if r is not served]
    assert len(others) == 3 and not any(r.is_dedicated for r in others)
    assert Manifest.read(out / MANIFEST_FILE_NAME) == manifest
    # Back on the multi-model endpoint: the same archives, the placement gone.
    again = build_catalog(catalog_of(tiny_cnn(), tiny_roberta()), out, progress=False)
    assert again.target_models == manifest.target_models
    assert not any(r.is_dedicated for r in again.archives)

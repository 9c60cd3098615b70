"""Helpers of the local Triton tests: archives from the project's build code, configs, processes."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from build_support import tiny_cnn, tiny_roberta
from tritonclient.grpc import model_config_pb2 as mc

from triton_mme.archive_inspection.archive import extract_archive
from triton_mme.catalog import parse_catalog
from triton_mme.core.files import file_sha256
from triton_mme.core.formats import Format
from triton_mme.core.manifest import (
    MANIFEST_FILE_NAME,
    ArchiveRecord,
    ComponentPlacement,
    Manifest,
    TensorSpec,
)
from triton_mme.core.naming import MODEL_FILE_NAMES, model_directory
from triton_mme.core.samples import sample_inputs
from triton_mme.core.triton_config import engine_cache_path, render_config
from triton_mme.model_build import runtimes
from triton_mme.model_build.model_config import build_model_config
from triton_mme.model_build.packaging import write_archive

MAX_BATCH_SIZE = tiny_cnn()["max_batch_size"]


def build_config(fmt: Format, *, tensorrt_accelerator: bool = True) -> mc.ModelConfig:
    """The config.pbtxt the build writes for the tiny CNN in `fmt` (ONNX with the TensorRT accelerator on)."""
    raw = TINY_CATALOG["models"][0] | {
        "onnxruntime": {"tensorrt_accelerator": {"enabled": tensorrt_accelerator}}
    }
    entry = parse_catalog({"models": [raw]}).models[0]
    prefix = "INPUT__0" if fmt is Format.TORCHSCRIPT else "input"
    inputs = (TensorSpec(name=prefix, datatype="FP32", dims=(3, 64, 64)),)
    outputs = (
        TensorSpec(
            name=prefix.replace("INPUT", "OUTPUT").replace("input", "output"), datatype="FP32", dims=(1000,)
        ),
    )
    return build_model_config(
        entry,
        fmt,
        model_name=model_directory(entry.name, fmt),
        inputs=inputs,
        outputs=outputs,
        model_sha256="0" * 64,
    )


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention `text` (tritonserver and stubs carry their paths)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in command and state != "Z":
            found.append(f"{entry.name}: {command[:200]}")
    return found


# Random-initialised models in every CPU format, small enough to export in seconds (build_support's).
TINY_CATALOG = {"models": [tiny_cnn(), tiny_roberta()]}


@dataclass
class BuiltArchive:
    """One archive of the build directory, with its own model file run directly for reference outputs."""

    record: ArchiveRecord
    path: Path
    _runner: Any = None

    @property
    def target_model(self) -> str:
        return self.record.target_model

    def sample(self, batch_size: int) -> dict[str, np.ndarray]:
        return sample_inputs(self.record.inputs, batch_size, seed=batch_size)

    def reference(self, feeds: dict[str, np.ndarray], workdir: Path) -> dict[str, np.ndarray]:
        inputs = [s.name for s in self.record.inputs]
        outputs = [s.name for s in self.record.outputs]
        if self._runner is None:
            model_file = extract_archive(self.path, workdir / self.target_model).model_file
            if self.record.format == "onnx":
                self._runner = runtimes.onnx_session(model_file)
            else:
                self._runner = runtimes.load_torchscript(model_file)
        if self.record.format == "onnx":
            return runtimes.run_onnx(self._runner, feeds)
        return runtimes.run_torchscript(self._runner, feeds, inputs, outputs)


def tensorrt_archive(out: Path, like: ArchiveRecord, workdir: Path) -> Path:
    """What the build packs for TensorRT (its config and layout), with a placeholder where the plan goes."""
    entry = parse_catalog(TINY_CATALOG).entry(like.name)
    plan = workdir / "model.plan"
    plan.write_bytes(b"a plan runs only on the GPU and TensorRT version that built it")
    config = build_model_config(
        entry,
        Format.TENSORRT,
        model_name=model_directory(like.name, Format.TENSORRT),
        inputs=like.inputs,
        outputs=like.outputs,
        model_sha256=file_sha256(plan),
    )
    packed = write_archive(
        out,
        name=like.name,
        fmt=Format.TENSORRT,
        model_dir=model_directory(like.name, Format.TENSORRT),
        config_text=render_config(config),
        model_file=plan,
        model_file_name=MODEL_FILE_NAMES[Format.TENSORRT],
    )
    return packed.path


def _rename(config: mc.ModelConfig, model_dir: str, model_file: Path) -> None:
    """The config's name and engine cache path as the build writes them for `model_dir`."""
    config.name = model_dir
    for accelerator in config.optimization.execution_accelerators.gpu_execution_accelerator:
        if "trt_engine_cache_path" in accelerator.parameters:
            accelerator.parameters["trt_engine_cache_path"] = engine_cache_path(
                model_dir, file_sha256(model_file)
            )


def _repack(out: Path, config: mc.ModelConfig, model_file: Path, *, name: str) -> Path:
    """An ONNX archive of `config` (its name the model directory) and `model_file`."""
    packed = write_archive(
        out,
        name=name,
        fmt=Format.ONNX,
        model_dir=config.name,
        config_text=render_config(config),
        model_file=model_file,
        model_file_name="model.onnx",
    )
    return packed.path


def renamed_archive(out: Path, source: Path, workdir: Path, *, name: str) -> Path:
    """The same ONNX model packaged under another model name: one more TargetModel for the platform."""
    extracted = extract_archive(source, workdir)
    config = extracted.contents.config
    _rename(config, model_directory(name, Format.ONNX), extracted.model_dir / "1" / "model.onnx")
    return _repack(out, config, extracted.model_dir / "1" / "model.onnx", name=name)


def mismatched_archive(out: Path, source: Path, workdir: Path) -> Path:
    """An ONNX archive whose config names an input the graph does not have: Triton must refuse to load it."""
    extracted = extract_archive(source, workdir)
    config = extracted.contents.config
    config.input[0].name = "not_in_the_graph"
    _rename(config, "mismatched-onnx", extracted.model_dir / "1" / "model.onnx")
    config.ClearField("model_warmup")
    return _repack(out, config, extracted.model_dir / "1" / "model.onnx", name="mismatched")


def counted_archive(out: Path, source: Path, workdir: Path, *, name: str, counts: tuple[int, ...]) -> Path:
    """The same ONNX model under another name, with one instance group per count (as the build writes)."""
    extracted = extract_archive(source, workdir)
    config = extracted.contents.config
    _rename(config, model_directory(name, Format.ONNX), extracted.model_dir / "1" / "model.onnx")
    del config.instance_group[:]
    for count in counts:
        config.instance_group.add(kind=mc.ModelInstanceGroup.KIND_GPU, count=count)
    return _repack(out, config, extracted.model_dir / "1" / "model.onnx", name=name)


def placed_copy(source: Path, models: Path, *, dedicated: tuple[str, str] = ("tiny-cnn", "onnx")) -> Path:
    """A copy of the build in `source` whose manifest places the archive `dedicated` (name, format) on an
    inference component, the rest on the multi-model endpoint."""
    models.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.is_file():
            shutil.copy2(path, models / path.name)
    manifest = Manifest.read(models / MANIFEST_FILE_NAME)
    archives = tuple(
        r.model_copy(update={"placement": ComponentPlacement()}) if (r.name, r.format) == dedicated else r
        for r in manifest.archives
    )
    (models / MANIFEST_FILE_NAME).write_text(Manifest(archives=archives).to_json(), encoding="utf-8")
    return models

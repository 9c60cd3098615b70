"""Exporters: one module per format behind one small interface.

An exporter turns a loaded PyTorch model into a model file (export), improves that file without PyTorch
(optimise), then proves it computes what PyTorch computed (verify, against outputs recorded before the
PyTorch module was released). Only a verified export is packaged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from triton_mme.core.errors import UserError
from triton_mme.core.formats import Format
from triton_mme.core.manifest import TensorSpec

if TYPE_CHECKING:
    from triton_mme.model_build.sources import LoadedModel


class ExportError(UserError, RuntimeError):
    """An export that failed or cannot run here; the message is one line."""


@dataclass
class ExportedModel:
    format: Format
    model_file: Path
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExportContext:
    """What exporters of one model share: a scratch directory and earlier exports (TensorRT reads ONNX)."""

    workdir: Path
    triton_tag: str
    exported: dict[str, Path] = field(default_factory=dict)


class Exporter(Protocol):
    format: Format

    def export(self, loaded: LoadedModel, context: ExportContext) -> ExportedModel:
        """Everything that reads the PyTorch module; the module is released after every format's export."""
        ...

    def optimise(self, loaded: LoadedModel, exported: ExportedModel, context: ExportContext) -> ExportedModel:
        """What works from the exported file alone (fusions, a TensorRT plan); the module is gone by now."""
        ...

    def verify(self, loaded: LoadedModel, exported: ExportedModel) -> dict[str, Any]:
        """Run the export at batch 1 and max_batch_size against PyTorch; details to record."""
        ...


def exporter_for(fmt: Format) -> Exporter:
    if fmt is Format.ONNX:
        from triton_mme.model_build.exporters.onnx import OnnxExporter

        return OnnxExporter()
    if fmt is Format.TORCHSCRIPT:
        from triton_mme.model_build.exporters.torchscript import TorchScriptExporter

        return TorchScriptExporter()
    from triton_mme.model_build.exporters.tensorrt import TensorRTExporter

    return TensorRTExporter()


def verification_batches(max_batch_size: int) -> list[int]:
    return sorted({1, max_batch_size})

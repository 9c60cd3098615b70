"""TorchScript export by tracing, with Triton's positional names INPUT__i / OUTPUT__i."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch

from triton_mme.core.formats import Format
from triton_mme.core.manifest import TensorSpec
from triton_mme.model_build.exporters import ExportContext, ExportedModel, verification_batches
from triton_mme.model_build.parity import FP32, compare
from triton_mme.model_build.sources import LoadedModel

TORCH_TYPES = {
    torch.float32: "FP32",
    torch.float16: "FP16",
    torch.float64: "FP64",
    torch.int64: "INT64",
    torch.int32: "INT32",
    torch.bool: "BOOL",
}


def _fresh_script_namespace() -> None:
    """Start tracing from an empty TorchScript class registry.

    TorchScript names repeated module classes `___torch_mangle_<n>` with a process-wide counter that
    lives in the Python compilation unit, so the same model traced after another one would serialise
    to different bytes. A new compilation unit restarts the counter and keeps archives reproducible.
    """
    torch._C._jit_clear_class_registry()
    torch.jit._recursive.concrete_type_store = torch.jit._recursive.ConcreteTypeStore()
    torch.jit._state._clear_class_state()
    torch.jit._state._python_cu = torch._C.CompilationUnit()


def _save_without_debug_records(module: torch.jit.ScriptModule, path: Path) -> None:
    """torch.jit.save, minus the *.debug_pkl records.

    Those hold the Python call stack of the trace (caller files, line numbers, checkout paths), so
    the same model traced from another caller would give other bytes. They only enrich TorchScript
    error messages; the records are copied with torch's own archive reader and writer.
    """
    traced = path.with_name(f"traced-{path.name}")
    torch.jit.save(module, str(traced))
    # The writer names the archive's top folder after the file stem, so keep the final stem.
    staging = path.parent / "staging"
    staging.mkdir(exist_ok=True)
    reader = torch._C.PyTorchFileReader(str(traced))
    writer = torch._C.PyTorchFileWriter(str(staging / path.name))
    for name in sorted(reader.get_all_records()):
        if name.endswith(".debug_pkl") or name == ".data/serialization_id":
            continue  # the writer derives its own serialization id from the records it holds
        data = reader.get_record(name)
        writer.write_record(name, data, len(data))
    writer.write_end_of_file()
    del writer, reader
    (staging / path.name).replace(path)
    traced.unlink()
    staging.rmdir()


def input_name(index: int) -> str:
    return f"INPUT__{index}"


def output_name(index: int) -> str:
    return f"OUTPUT__{index}"


class TorchScriptExporter:
    format = Format.TORCHSCRIPT

    def export(self, loaded: LoadedModel, context: ExportContext) -> ExportedModel:
        path = context.workdir / "model.pt"
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")
            _fresh_script_namespace()
            # Batch 2, not 1: a trace at batch 1 may specialise broadcasts to that size.
            traced = torch.jit.trace(
                loaded.module, loaded.example_inputs(2), strict=False, check_trace=False, _store_inputs=False
            )
            _save_without_debug_records(traced, path)
        # Output specs come from the saved module itself, run once at batch 1.
        from triton_mme.model_build.runtimes import load_torchscript

        reloaded = load_torchscript(path)
        with torch.no_grad():
            result = reloaded(*loaded.example_inputs(1))
        tensors = result if isinstance(result, tuple | list) else (result,)
        inputs = tuple(
            TensorSpec(name=input_name(i), datatype=s.datatype, dims=s.dims)
            for i, s in enumerate(loaded.inputs)
        )
        outputs = tuple(
            TensorSpec(name=output_name(i), datatype=TORCH_TYPES[t.dtype], dims=tuple(t.shape[1:]))
            for i, t in enumerate(tensors)
        )
        details = {
            "torch": torch.__version__,
            "outputs": dict(zip(loaded.output_names, (o.name for o in outputs), strict=True)),
        }
        return ExportedModel(Format.TORCHSCRIPT, path, inputs, outputs, details)

    def optimise(self, loaded: LoadedModel, exported: ExportedModel, context: ExportContext) -> ExportedModel:
        return exported  # Triton's PyTorch backend runs the traced module as saved

    def verify(self, loaded: LoadedModel, exported: ExportedModel) -> dict[str, Any]:
        from triton_mme.model_build import runtimes

        module = runtimes.load_torchscript(exported.model_file)
        input_order = [s.name for s in loaded.inputs]
        output_order = list(loaded.output_names)
        errors: dict[str, float] = {}
        for batch in verification_batches(loaded.entry.max_batch_size):
            expected = loaded.expected(batch)
            produced = runtimes.run_torchscript(module, expected.feeds, input_order, output_order)
            found = compare(f"torchscript batch {batch}", produced, expected.outputs, FP32)
            for name, error in found.items():
                errors[name] = max(errors.get(name, 0.0), error)
        return {
            "parity": {"runtime": "torch.jit (reloaded)", "tolerance": vars(FP32), "max_abs_error": errors}
        }

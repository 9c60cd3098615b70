"""ONNX export (dynamic batch axis), onnx.checker, offline transformer fusions, ONNX Runtime parity."""

from __future__ import annotations

import gc
import os
import shutil
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import onnx
import torch

from triton_mme.core.formats import Format
from triton_mme.core.manifest import TensorSpec
from triton_mme.model_build.exporters import ExportContext, ExportedModel, ExportError, verification_batches
from triton_mme.model_build.parity import FP32, compare
from triton_mme.model_build.sources import LoadedModel

# The highest opset of torch's TorchScript-based exporter, and loadable by every ONNX Runtime the
# supported Triton images ship (24.09: 1.19.2 and later; opset 20 needs 1.17+).
OPSET = 20
BATCH_AXIS = "batch"
# ONNX Runtime's transformer optimizer knows these architectures' attention patterns.
TRANSFORMER_OPTIMIZER_TYPES = {"bert": "bert", "roberta": "bert", "xlm-roberta": "bert", "distilbert": "bert"}
# The fused graph with its weights as external data, beside the one-file model.onnx packaged.
FUSED_GRAPH = "fused-graph.onnx"
ONNX_TYPES: dict[int, str] = {
    onnx.TensorProto.FLOAT: "FP32",
    onnx.TensorProto.FLOAT16: "FP16",
    onnx.TensorProto.DOUBLE: "FP64",
    onnx.TensorProto.INT64: "INT64",
    onnx.TensorProto.INT32: "INT32",
    onnx.TensorProto.INT8: "INT8",
    onnx.TensorProto.UINT8: "UINT8",
    onnx.TensorProto.BOOL: "BOOL",
}


def _spec(value: onnx.ValueInfoProto) -> TensorSpec:
    tensor = value.type.tensor_type
    if tensor.elem_type not in ONNX_TYPES:
        raise ExportError(
            f"ONNX tensor '{value.name}' has element type {tensor.elem_type}, which Triton cannot map"
        )
    dims = tensor.shape.dim
    if not dims or dims[0].HasField("dim_value"):
        raise ExportError(f"ONNX tensor '{value.name}' has no dynamic batch axis")
    return TensorSpec(
        name=value.name,
        datatype=ONNX_TYPES[tensor.elem_type],
        dims=tuple(d.dim_value if d.HasField("dim_value") else -1 for d in dims[1:]),
    )


def graph_tensors(model_file: Path) -> tuple[tuple[TensorSpec, ...], tuple[TensorSpec, ...]]:
    """Inputs and outputs as the exported graph declares them (initialisers are not inputs)."""
    graph = onnx.load(str(model_file), load_external_data=False).graph
    initialisers = {i.name for i in graph.initializer}
    inputs = tuple(_spec(v) for v in graph.input if v.name not in initialisers)
    return inputs, tuple(_spec(v) for v in graph.output)


@contextmanager
def frozen_parameters(module: torch.nn.Module) -> Iterator[None]:
    """The module's parameters with requires_grad off for the duration, then as they were.

    The exporter traces the module with autograd on unless its parameters say otherwise, and the trace
    then holds autograd state of the size of the weights: measured on RoBERTa-large (random weights), the
    export's peak resident memory went from 8.33 GiB to 6.08 GiB with the parameters frozen. The ONNX
    graph and its weights are the same either way.
    """
    flags = [(parameter, parameter.requires_grad) for parameter in module.parameters()]
    module.requires_grad_(False)
    try:
        yield
    finally:
        for parameter, flag in flags:
            parameter.requires_grad_(flag)


@contextmanager
def attention_fastpath_off() -> Iterator[None]:
    """nn.MultiheadAttention's fused inference path off for the duration, then as it was.

    In eval mode with no parameter requiring grad (frozen_parameters), nn.MultiheadAttention and
    nn.TransformerEncoderLayer call aten::_native_multi_head_attention, which the TorchScript-based ONNX
    exporter cannot export ("not supported" at every opset): torchvision's ViT failed so. The plain path
    is the same computation in exportable operators.
    """
    enabled = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(enabled)


def export_plain(loaded: LoadedModel, path: Path) -> Path:
    """torch.onnx.export with the TorchScript-based exporter: its graphs are what ONNX Runtime's
    transformer optimizer fuses (the dynamo exporter's attention is left unfused)."""
    names = [s.name for s in loaded.inputs]
    with warnings.catch_warnings(), frozen_parameters(loaded.module), attention_fastpath_off():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            loaded.module,
            loaded.example_inputs(2),
            str(path),
            dynamo=False,
            opset_version=OPSET,
            input_names=names,
            output_names=list(loaded.output_names),
            dynamic_axes={n: {0: BATCH_AXIS} for n in [*names, *loaded.output_names]},
            do_constant_folding=True,
        )
    onnx.checker.check_model(str(path))
    return path


def with_external_weights(model_file: Path, path: Path) -> Path:
    """The same model as a small graph file plus one weights file beside it (`<name>.data`)."""
    model = onnx.load(str(model_file))
    onnx.save_model(model, str(path), save_as_external_data=True, location=f"{path.name}.data")
    return path


def with_inline_weights(model_file: Path, path: Path) -> Path:
    """The same model as one file (what the archive packages), its external weights read back in."""
    model = onnx.load(str(model_file))
    for tensor in model.graph.initializer:
        tensor.ClearField("data_location")  # reads as DEFAULT: the file looks as if written in one piece
    onnx.save_model(model, str(path))
    return path


@contextmanager
def working_directory(path: Path) -> Iterator[None]:
    previous = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def optimize_transformer(loaded: LoadedModel, plain: Path, path: Path) -> dict[str, int]:
    """Offline fusions (Attention, SkipLayerNormalization, BiasGelu); returns the fused-op counts.

    The optimizer copies the model it is given several times over (loads, shape inference, the fused
    weights, serialisation), so it is given the graph with its weights as external data: it reads only
    the few weights a fusion merges. The weights come back into one file only at the end.
    """
    from onnxruntime.transformers.optimizer import optimize_model

    workdir = path.parent
    graph = with_external_weights(plain, workdir / "plain-graph.onnx")
    fused_graph = workdir / FUSED_GRAPH
    facts = loaded.transformer
    # The optimizer reads external weights relative to the current directory (numpy_helper.to_array).
    with working_directory(workdir):
        optimized = optimize_model(
            onnx.load(graph.name, load_external_data=False),
            model_type=TRANSFORMER_OPTIMIZER_TYPES[facts["model_type"]],
            num_heads=facts["num_heads"],
            hidden_size=facts["hidden_size"],
            opt_level=0,
        )
        optimized.save_model_to_file(fused_graph.name, use_external_data_format=True)
    fused = {op: count for op, count in optimized.get_fused_operator_statistics().items() if count}
    del optimized
    gc.collect()
    onnx.checker.check_model(str(fused_graph))
    with_inline_weights(fused_graph, path)
    return fused


class OnnxExporter:
    format = Format.ONNX

    def export(self, loaded: LoadedModel, context: ExportContext) -> ExportedModel:
        from triton_mme.model_build.sources import PrebuiltOnnx

        if isinstance(loaded, PrebuiltOnnx):
            # The user's own export, as it is: no fusion (its graph may not be the exporter's), checked below.
            plain = context.workdir / "plain.onnx"
            shutil.copyfile(loaded.model_file, plain)
            context.exported["onnx-plain"] = plain
            return ExportedModel(
                Format.ONNX, plain, (), (), {"exporter": "prebuilt (the catalog's own file)"}
            )
        plain = export_plain(loaded, context.workdir / "plain.onnx")
        context.exported["onnx-plain"] = plain
        details: dict[str, Any] = {"opset": OPSET, "exporter": "torch.onnx (TorchScript-based)"}
        # Tensors are read from the graph in optimise: reading them here would load the exported weights
        # next to the module's.
        return ExportedModel(Format.ONNX, plain, (), (), details)

    def optimise(self, loaded: LoadedModel, exported: ExportedModel, context: ExportContext) -> ExportedModel:
        if loaded.transformer.get("model_type") not in TRANSFORMER_OPTIMIZER_TYPES:
            inputs, outputs = graph_tensors(exported.model_file)
            return ExportedModel(Format.ONNX, exported.model_file, inputs, outputs, exported.details)
        model_file = context.workdir / "model.onnx"
        fused = optimize_transformer(loaded, exported.model_file, model_file)
        inputs, outputs = graph_tensors(context.workdir / FUSED_GRAPH)  # model_file's graph, no weights
        details = {**exported.details, "fused_operators": fused}
        return ExportedModel(Format.ONNX, model_file, inputs, outputs, details)

    def verify(self, loaded: LoadedModel, exported: ExportedModel) -> dict[str, Any]:
        from triton_mme.model_build import runtimes
        from triton_mme.model_build.sources import PrebuiltOnnx

        session = runtimes.onnx_session(exported.model_file)
        errors: dict[str, float] = {}
        for batch in verification_batches(loaded.entry.max_batch_size):
            expected = loaded.expected(batch)
            produced = runtimes.run_onnx(session, expected.feeds)
            found = compare(f"onnx batch {batch}", produced, expected.outputs, FP32)
            for name, error in found.items():
                errors[name] = max(errors.get(name, 0.0), error)
        parity: dict[str, Any] = {
            "runtime": "onnxruntime-cpu",
            "tolerance": vars(FP32),
            "max_abs_error": errors,
        }
        if isinstance(loaded, PrebuiltOnnx):
            parity["reference"] = (
                "the file itself: no PyTorch model to compare with; it ran at each batch size"
            )
        return {"parity": parity}

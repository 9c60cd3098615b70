"""Real exports of tiny random models; the parity gate fails when an export is tampered with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from build_support import entry_of, tiny_cnn, tiny_roberta
from onnx import numpy_helper

from triton_mme.core.manifest import TensorSpec
from triton_mme.model_build.exporters import ExportContext, ExportError
from triton_mme.model_build.exporters.onnx import FUSED_GRAPH, OnnxExporter, graph_tensors
from triton_mme.model_build.exporters.torchscript import TorchScriptExporter
from triton_mme.model_build.parity import ParityError
from triton_mme.model_build.pipeline import record_expectations
from triton_mme.model_build.sources import LoadedModel, load_model


@pytest.fixture(scope="module")
def cnn() -> LoadedModel:
    return load_model(entry_of(tiny_cnn()))


@pytest.fixture(scope="module")
def roberta() -> LoadedModel:
    return load_model(entry_of(tiny_roberta()))


def _context(tmp_path: Path) -> ExportContext:
    return ExportContext(tmp_path, "25.04-py3")


def _scale_first_weight(model_file: Path) -> None:
    model = onnx.load(str(model_file))
    weight = next(
        i for i in model.graph.initializer if i.data_type == onnx.TensorProto.FLOAT and len(i.dims) > 1
    )
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * 1.5, weight.name))
    onnx.save(model, str(model_file))


def test_random_weights_are_reproducible(cnn: LoadedModel) -> None:
    again = load_model(cnn.entry)
    for mine, theirs in zip(
        cnn.module.state_dict().values(), again.module.state_dict().values(), strict=True
    ):
        assert torch.equal(mine, theirs)


def test_onnx_image_model_names_types_and_dims_come_from_the_graph(cnn: LoadedModel, tmp_path: Path) -> None:
    exporter = OnnxExporter()
    context = _context(tmp_path)
    exported = exporter.optimise(cnn, exporter.export(cnn, context), context)
    assert exported.inputs == (TensorSpec(name="input", datatype="FP32", dims=(3, 64, 64)),)
    assert exported.outputs == (TensorSpec(name="output", datatype="FP32", dims=(1000,)),)
    graph = onnx.load(str(exported.model_file)).graph
    assert graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert exported.details["opset"] == 20
    parity = exporter.verify(cnn, exported)["parity"]
    assert parity["max_abs_error"]["output"] < 1e-4


def test_onnx_text_model_is_fused_and_still_matches_pytorch(roberta: LoadedModel, tmp_path: Path) -> None:
    exporter = OnnxExporter()
    context = _context(tmp_path)
    exported = exporter.optimise(roberta, exporter.export(roberta, context), context)
    assert [(s.name, s.datatype, s.dims) for s in exported.inputs] == [
        ("input_ids", "INT64", (16,)), ("attention_mask", "INT64", (16,)),
    ]  # fmt: skip
    # The fused graph leaves the sequence axis of its output symbolic; the config says -1 (any size).
    assert [(s.name, s.dims) for s in exported.outputs] == [
        ("last_hidden_state", (-1, 32)),
        ("pooler_output", (32,)),
    ]
    fused = exported.details["fused_operators"]
    assert fused["Attention"] == 2 and fused["SkipLayerNormalization"] >= 2
    ops = {node.op_type for node in onnx.load(str(exported.model_file)).graph.node}
    assert "Attention" in ops and "Softmax" not in ops
    assert exporter.verify(roberta, exported)["parity"]["max_abs_error"]["last_hidden_state"] < 1e-4


def test_tampered_onnx_fails_the_parity_gate(cnn: LoadedModel, tmp_path: Path) -> None:
    exporter = OnnxExporter()
    exported = exporter.export(cnn, _context(tmp_path))
    _scale_first_weight(exported.model_file)
    with pytest.raises(
        ParityError, match=r"onnx batch 1: output 'output' differs from PyTorch by up to .* \(allowed atol"
    ):
        exporter.verify(cnn, exported)


def test_torchscript_uses_positional_names_and_matches_pytorch(roberta: LoadedModel, tmp_path: Path) -> None:
    exporter = TorchScriptExporter()
    exported = exporter.export(roberta, _context(tmp_path))
    assert [s.name for s in exported.inputs] == ["INPUT__0", "INPUT__1"]
    assert [(s.name, s.datatype, s.dims) for s in exported.outputs] == [
        ("OUTPUT__0", "FP32", (16, 32)), ("OUTPUT__1", "FP32", (32,)),
    ]  # fmt: skip
    errors = exporter.verify(roberta, exported)["parity"]["max_abs_error"]
    assert set(errors) == {"last_hidden_state", "pooler_output"}


def test_tampered_torchscript_fails_the_parity_gate(cnn: LoadedModel, tmp_path: Path) -> None:
    exporter = TorchScriptExporter()
    exported = exporter.export(cnn, _context(tmp_path))
    module = torch.jit.load(str(exported.model_file))
    with torch.no_grad():
        next(iter(module.parameters())).mul_(1.5)
    torch.jit.save(module, str(exported.model_file))
    with pytest.raises(ParityError, match="torchscript batch 1: output 'output' differs"):
        exporter.verify(cnn, exported)


def test_graph_without_a_dynamic_batch_axis_is_refused(cnn: LoadedModel, tmp_path: Path) -> None:
    path = tmp_path / "static.onnx"
    torch.onnx.export(cnn.module, cnn.example_inputs(1), str(path), dynamo=False, input_names=["input"])
    with pytest.raises(ExportError, match="ONNX tensor 'input' has no dynamic batch axis"):
        graph_tensors(path)


def test_reference_outputs_are_deterministic(cnn: LoadedModel) -> None:
    feeds = cnn.sample(2)
    np.testing.assert_array_equal(cnn.reference(feeds)["output"], cnn.reference(cnn.sample(2))["output"])


def test_exports_are_optimised_and_verified_after_the_module_is_released(tmp_path: Path) -> None:
    """The build drops the PyTorch weights after exporting; what follows uses PyTorch's recorded outputs."""
    loaded = load_model(entry_of(tiny_roberta()))
    record_expectations(loaded)
    exporter = OnnxExporter()
    context = _context(tmp_path)
    exported = exporter.export(loaded, context)
    loaded.release()
    assert not hasattr(loaded, "module")
    fused = exporter.optimise(loaded, exported, context)
    assert fused.model_file.name == "model.onnx" and (tmp_path / FUSED_GRAPH).is_file()
    # The packaged file holds its weights itself: it loads with nothing beside it.
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "model.onnx").write_bytes(fused.model_file.read_bytes())
    model = onnx.load(str(alone / "model.onnx"))
    assert not any(onnx.external_data_helper.uses_external_data(t) for t in model.graph.initializer)
    parity = exporter.verify(loaded, fused)["parity"]["max_abs_error"]
    assert parity["last_hidden_state"] < 1e-4

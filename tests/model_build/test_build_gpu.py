"""TorchScript and ONNX parity with the PyTorch model on CUDA (run where a GPU exists)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from build_support import entry_of, tiny_cnn, tiny_roberta

from triton_mme.model_build import runtimes
from triton_mme.model_build.exporters import ExportContext
from triton_mme.model_build.exporters.onnx import OnnxExporter
from triton_mme.model_build.exporters.torchscript import TorchScriptExporter
from triton_mme.model_build.parity import FP32, compare
from triton_mme.model_build.sources import load_model

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("raw", [tiny_cnn(), tiny_roberta()], ids=["cnn", "roberta"])
def test_torchscript_on_cuda_matches_pytorch_on_cuda(raw: dict, tmp_path: Path) -> None:
    loaded = load_model(entry_of(raw))
    exported = TorchScriptExporter().export(loaded, ExportContext(tmp_path, "25.04-py3"))
    loaded.module.cuda()
    module = runtimes.load_torchscript(exported.model_file, device="cuda")
    for batch in (1, loaded.entry.max_batch_size):
        feeds = loaded.sample(batch)
        produced = runtimes.run_torchscript(
            module, feeds, [s.name for s in loaded.inputs], list(loaded.output_names)
        )
        compare(f"torchscript cuda batch {batch}", produced, loaded.reference(feeds), FP32)


@pytest.mark.parametrize("raw", [tiny_cnn(), tiny_roberta()], ids=["cnn", "roberta"])
def test_onnx_matches_pytorch_on_cuda(raw: dict, tmp_path: Path) -> None:
    loaded = load_model(entry_of(raw))
    exported = OnnxExporter().export(loaded, ExportContext(tmp_path, "25.04-py3"))
    loaded.module.cuda()
    session = runtimes.onnx_session(exported.model_file, device="cuda")
    for batch in (1, loaded.entry.max_batch_size):
        feeds = loaded.sample(batch)
        produced = runtimes.run_onnx(session, feeds)
        errors = compare(f"onnx vs cuda batch {batch}", produced, loaded.reference(feeds), FP32)
        assert all(np.isfinite(e) for e in errors.values())

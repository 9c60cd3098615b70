"""One full-size export: ResNet-50 (random weights) to ONNX, verified and packaged like the default."""

from __future__ import annotations

from pathlib import Path

import pytest
from build_support import catalog_of

from triton_mme.archive_inspection.archive import read_archive
from triton_mme.model_build.pipeline import build_catalog


@pytest.mark.slow
def test_resnet50_onnx_export_is_verified_and_packaged(tmp_path: Path) -> None:
    raw = {
        "name": "resnet50",
        "source": "torchvision:resnet50",
        "weights": "random",
        "formats": ["onnx"],
        "max_batch_size": 2,  # parity at batch 1 and 2 keeps the CPU time of the check small
    }
    (record,) = build_catalog(catalog_of(raw), tmp_path, progress=False).archives
    assert [(s.name, s.datatype, s.dims) for s in record.inputs] == [("input", "FP32", (3, 224, 224))]
    assert [(s.name, s.dims) for s in record.outputs] == [("output", (1000,))]
    assert record.details["parity"]["max_abs_error"]["output"] < 1e-3
    contents = read_archive(tmp_path / record.target_model)
    assert contents.model_size > 90_000_000  # 25.6 M fp32 parameters, weights inside model.onnx
    assert contents.config.platform == "onnxruntime_onnx"

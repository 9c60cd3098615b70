"""A tiny ONNX model and its archives (project-shaped and notebook-shaped) for the harness tests."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from benchmarks import baselines
from triton_mme.catalog import parse_catalog
from triton_mme.core.files import file_sha256
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.triton_config import render_config
from triton_mme.model_build.model_config import build_model_config

FEATURES = 4


def tiny_onnx(path: Path) -> Path:
    """y = relu(x + 1), batch dimension dynamic."""
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["x", "one"], ["shifted"]),
            helper.make_node("Relu", ["shifted"], ["y"]),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    onnx.save(model, str(path))
    return path


SPECS = {
    "inputs": [TensorSpec(name="x", datatype="FP32", dims=(FEATURES,))],
    "outputs": [TensorSpec(name="y", datatype="FP32", dims=(FEATURES,))],
}


@pytest.fixture(scope="session")
def tiny_archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """'notebook': minimal config; 'project': the project's config generator (ORT settings, a warm-up)."""
    folder = tmp_path_factory.mktemp("tiny")
    model = tiny_onnx(folder / "tiny.onnx")
    entry = parse_catalog(
        {
            "models": [
                {
                    "name": "tiny",
                    "source": "torchvision:tiny",
                    "weights": "random",
                    "formats": ["onnx"],
                    "max_batch_size": 4,
                    # A warm-up request, so the cold-start child's warm-up phase is exercised.
                    "warmup": True,
                }
            ]
        }
    ).models[0]
    project_config = render_config(
        build_model_config(
            entry, entry.formats[0], model_name="tiny-onnx", model_sha256=file_sha256(model), **SPECS
        )
    )
    notebook_config = baselines.notebook_config("tiny-onnx", max_batch_size=4, **SPECS)
    return {
        "project": baselines.pack_archive(model, project_config, folder / "project.tar.gz", name="tiny-onnx"),
        "notebook": baselines.pack_archive(
            model, notebook_config, folder / "notebook.tar.gz", name="tiny-onnx"
        ),
    }

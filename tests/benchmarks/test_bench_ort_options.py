"""Session options follow config.pbtxt the way Triton's ONNX backend reads it."""

from __future__ import annotations

import onnxruntime as ort
import pytest
from tritonclient.grpc import model_config_pb2 as pb

from benchmarks.ort_options import default_session_options, describe, session_options
from triton_mme.catalog import parse_catalog
from triton_mme.core.formats import Format
from triton_mme.core.manifest import TensorSpec
from triton_mme.model_build.model_config import build_model_config

LEVEL = ort.GraphOptimizationLevel


def config_with(level: int | None = None, **parameters: str) -> pb.ModelConfig:
    config = pb.ModelConfig(name="m", platform="onnxruntime_onnx")
    if level is not None:
        config.optimization.graph.level = level
    for key, value in parameters.items():
        config.parameters[key].string_value = value
    return config


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        (None, LEVEL.ORT_ENABLE_ALL),
        (-1, LEVEL.ORT_ENABLE_BASIC),
        (1, LEVEL.ORT_ENABLE_EXTENDED),
        (2, LEVEL.ORT_DISABLE_ALL),
        (0, LEVEL.ORT_ENABLE_ALL),
    ],
)
def test_graph_level_maps_like_triton(level: int | None, expected: object) -> None:
    assert session_options(config_with(level)).graph_optimization_level == expected


def test_parameters_set_mode_threads_and_memory_options() -> None:
    options = session_options(
        config_with(
            execution_mode="1",
            intra_op_thread_count="2",
            inter_op_thread_count="1",
            enable_mem_arena="0",
            enable_mem_pattern="0",
        )
    )
    assert options.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (2, 1)
    assert not options.enable_cpu_mem_arena
    assert not options.enable_mem_pattern


def test_zero_thread_counts_and_no_parameters_keep_onnxruntime_defaults() -> None:
    defaults = default_session_options()
    options = session_options(config_with(intra_op_thread_count="0", inter_op_thread_count="0"))
    assert options.intra_op_num_threads == defaults.intra_op_num_threads
    assert options.inter_op_num_threads == defaults.inter_op_num_threads
    assert options.execution_mode == defaults.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert "default" in describe(options)


def test_the_project_default_config_is_applied() -> None:
    entry = parse_catalog(
        {
            "models": [
                {
                    "name": "m",
                    "source": "torchvision:resnet18",
                    "weights": "random",
                    "formats": ["onnx"],
                    "max_batch_size": 8,
                    "onnxruntime": {"execution_mode": "parallel", "graph_optimization": "basic"},
                }
            ]
        }
    ).models[0]
    spec = TensorSpec(name="x", datatype="FP32", dims=(3,))
    config = build_model_config(
        entry, Format.ONNX, model_name="m-onnx", inputs=[spec], outputs=[spec], model_sha256="0" * 64
    )
    options = session_options(config)
    assert options.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert options.graph_optimization_level == LEVEL.ORT_ENABLE_BASIC

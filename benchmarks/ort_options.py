"""ONNX Runtime session options from a config.pbtxt, read the way Triton's ONNX backend reads them.

Mirrors triton-inference-server/onnxruntime_backend (src/onnxruntime.cc, ModelState constructor):
graph level -1 basic, 1 extended, 2 disabled, anything else all; `execution_mode` 0/1; thread counts
applied only when > 0; `enable_mem_arena` and `enable_mem_pattern` only when present. GPU-only keys
(cudnn_conv_algo_search, arena_extend_strategy, accelerators) have no effect on the CPU provider.
"""

from __future__ import annotations

from typing import Any

from tritonclient.grpc import model_config_pb2 as pb

_TRUE = {"1", "true", "yes", "on"}


def _parameter(config: pb.ModelConfig, key: str) -> str | None:
    if key not in config.parameters:
        return None
    return str(config.parameters[key].string_value).strip()


def session_options(config: pb.ModelConfig) -> Any:
    """The SessionOptions Triton would create for this model's config."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if config.HasField("optimization") and config.optimization.HasField("graph"):
        level = {
            -1: ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            1: ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            2: ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        }.get(config.optimization.graph.level, level)
    options.graph_optimization_level = level
    mode = _parameter(config, "execution_mode") or "0"
    options.execution_mode = (
        ort.ExecutionMode.ORT_PARALLEL if mode == "1" else ort.ExecutionMode.ORT_SEQUENTIAL
    )
    intra = int(_parameter(config, "intra_op_thread_count") or 0)
    if intra > 0:
        options.intra_op_num_threads = intra
    inter = int(_parameter(config, "inter_op_thread_count") or 0)
    if inter > 0:
        options.inter_op_num_threads = inter
    arena = _parameter(config, "enable_mem_arena")
    if arena is not None:
        options.enable_cpu_mem_arena = arena.lower() in _TRUE
    pattern = _parameter(config, "enable_mem_pattern")
    if pattern is not None:
        options.enable_mem_pattern = pattern.lower() in _TRUE
    return options


def default_session_options() -> Any:
    """What a notebook gets from `ort.InferenceSession(path)`: ONNX Runtime's defaults."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return options


def describe(options: Any) -> str:
    """A one-line account of the options that matter on CPU, for the results."""
    return (
        f"graph optimization {options.graph_optimization_level.name}, "
        f"execution {options.execution_mode.name}, "
        f"intra-op threads {options.intra_op_num_threads or 'default'}, "
        f"inter-op threads {options.inter_op_num_threads or 'default'}"
    )


CUDNN_CONV_ALGO_SEARCH = {"0": "EXHAUSTIVE", "1": "HEURISTIC", "2": "DEFAULT"}
ARENA_EXTEND_STRATEGY = {"0": "kNextPowerOfTwo", "1": "kSameAsRequested"}


def cuda_provider_options(config: pb.ModelConfig) -> dict[str, str]:
    """CUDAExecutionProvider options from the config's parameters, as Triton's ONNX backend sets them
    (absent keys keep ONNX Runtime's defaults, e.g. exhaustive cuDNN convolution search)."""
    options: dict[str, str] = {}
    search = _parameter(config, "cudnn_conv_algo_search")
    if search in CUDNN_CONV_ALGO_SEARCH:
        options["cudnn_conv_algo_search"] = CUDNN_CONV_ALGO_SEARCH[search]
    strategy = _parameter(config, "arena_extend_strategy")
    if strategy in ARENA_EXTEND_STRATEGY:
        options["arena_extend_strategy"] = ARENA_EXTEND_STRATEGY[strategy]
    for key in ("gpu_mem_limit", "do_copy_in_default_stream"):
        value = _parameter(config, key)
        if value:
            options[key] = value
    return options

"""The config.pbtxt the build writes for a catalog entry, as Triton's own message (core.triton_config): the
platform and model file of its format, the exported model's tensors, batching, instances, warm-up, and the
entry's ONNX Runtime settings mapped to the keys and numbers the backend reads (core.triton_config's tables).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.catalog import ModelEntry, OnnxRuntimeSettings
from triton_mme.core.formats import Format
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.naming import MODEL_FILE_NAMES, PLATFORMS
from triton_mme.core.triton_config import (
    ARENA_EXTEND_STRATEGIES,
    CUDNN_CONV_ALGO_SEARCH,
    EXECUTION_MODES,
    GRAPH_LEVELS,
    engine_cache_path,
    triton_type,
)

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def _tensors(specs: Sequence[TensorSpec], factory: type) -> list:
    return [factory(name=s.name, data_type=triton_type(s.datatype), dims=list(s.dims)) for s in specs]


def _flag(value: bool) -> str:
    return "1" if value else "0"


def _onnxruntime_options(
    config: pb.ModelConfig, settings: OnnxRuntimeSettings, model_name: str, model_sha256: str
) -> None:
    level = GRAPH_LEVELS[settings.graph_optimization]
    if level is not None:
        config.optimization.graph.level = level
    parameters = {
        "cudnn_conv_algo_search": str(CUDNN_CONV_ALGO_SEARCH[settings.cudnn_conv_algo_search]),
        "execution_mode": str(EXECUTION_MODES[settings.execution_mode]),
        "arena_extend_strategy": str(ARENA_EXTEND_STRATEGIES[settings.arena_extend_strategy]),
        "enable_mem_pattern": _flag(settings.enable_mem_pattern),
        "do_copy_in_default_stream": _flag(settings.do_copy_in_default_stream),
        "intra_op_thread_count": str(settings.intra_op_thread_count),
        "inter_op_thread_count": str(settings.inter_op_thread_count),
    }
    for key, value in parameters.items():
        config.parameters[key].string_value = value
    accelerator = settings.tensorrt_accelerator
    if accelerator.enabled:
        trt = config.optimization.execution_accelerators.gpu_execution_accelerator.add(name="tensorrt")
        trt.parameters["precision_mode"] = accelerator.precision.upper()
        if accelerator.engine_cache:
            trt.parameters["trt_engine_cache_enable"] = "1"
            trt.parameters["trt_engine_cache_path"] = engine_cache_path(model_name, model_sha256)


def _warmup(config: pb.ModelConfig, inputs: Sequence[TensorSpec]) -> None:
    warmup = config.model_warmup.add(name="warmup_batch_1", batch_size=1)
    for spec in inputs:
        data = warmup.inputs[spec.name]
        data.data_type = triton_type(spec.datatype)
        data.dims.extend(spec.dims)
        # Random integers could fall outside a vocabulary; zeros are always valid token ids.
        if spec.datatype.startswith("FP"):
            data.random_data = True
        else:
            data.zero_data = True


def build_model_config(
    entry: ModelEntry,
    fmt: Format,
    *,
    model_name: str,
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    model_sha256: str,
) -> pb.ModelConfig:
    """The Triton configuration of one archive; tensor specs come from the exported model itself, and
    `model_sha256` (the hex sha256 of the model file's bytes) names its engine cache."""
    if not _SHA256_HEX.fullmatch(model_sha256):
        raise ValueError(f"model_sha256: {model_sha256!r} is not a hex sha256 digest")
    config = pb.ModelConfig(
        name=model_name,
        platform=PLATFORMS[fmt],
        max_batch_size=entry.max_batch_size,
        default_model_filename=MODEL_FILE_NAMES[fmt],
    )
    config.input.extend(_tensors(inputs, pb.ModelInput))
    config.output.extend(_tensors(outputs, pb.ModelOutput))
    batching = entry.dynamic_batching
    if batching.enabled:
        config.dynamic_batching.preferred_batch_size.extend(batching.preferred_batch_sizes)
        config.dynamic_batching.max_queue_delay_microseconds = batching.max_queue_delay_microseconds
    config.instance_group.add(kind=pb.ModelInstanceGroup.KIND_GPU, count=entry.instance_count)
    if fmt is Format.ONNX:
        _onnxruntime_options(config, entry.onnxruntime, model_name, model_sha256)
    if entry.warmup:
        _warmup(config, inputs)
    return config

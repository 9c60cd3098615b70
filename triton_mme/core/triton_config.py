"""config.pbtxt as Triton's own protobuf message (`model_config_pb2.ModelConfig`), never a template.

Every ONNX Runtime key below was checked against triton-inference-server/onnxruntime_backend
(src/onnxruntime.cc): graph `level` -1 = basic, 1 = extended, 2 = disabled and any other value or no
`graph` section = all; `parameters` are read as string values.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.core.catalog import Format, ModelEntry, OnnxRuntimeSettings
from triton_mme.core.errors import UserError
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.naming import CONTENT_HASH_LENGTH, MODEL_FILE_NAMES, PLATFORMS

GRAPH_LEVELS: dict[str, int | None] = {"disabled": 2, "basic": -1, "extended": 1, "all": None}
CUDNN_CONV_ALGO_SEARCH = {"exhaustive": 0, "heuristic": 1, "default": 2}
EXECUTION_MODES = {"sequential": 0, "parallel": 1}
ARENA_EXTEND_STRATEGIES = {"next_power_of_two": 0, "same_as_requested": 1}
# The accelerator's engines live on the instance disk; a per-model path lets a reload after an MME
# eviction reuse them instead of rebuilding. ONNX Runtime's own engine id hashes the graph's structure
# and file name, not its weights, so the path carries the model file's content hash: a retrained model
# (same graph, new weights) gets a fresh directory and never runs the previous model's engine.
TRT_ENGINE_CACHE_ROOT = "/tmp/triton-ort-trt-cache"
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class ConfigError(UserError, ValueError):
    """A config.pbtxt that does not parse against Triton's schema."""


def triton_type(datatype: str) -> int:
    """'FP32' -> pb.TYPE_FP32."""
    return int(pb.DataType.Value(f"TYPE_{datatype}"))


def datatype_name(data_type: int) -> str:
    """pb.TYPE_FP32 -> 'FP32'."""
    return str(pb.DataType.Name(data_type)).removeprefix("TYPE_")


def _tensors(specs: Sequence[TensorSpec], factory: type) -> list:
    return [factory(name=s.name, data_type=triton_type(s.datatype), dims=list(s.dims)) for s in specs]


def _flag(value: bool) -> str:
    return "1" if value else "0"


def engine_cache_path(model_name: str, model_sha256: str) -> str:
    """Where ORT's TensorRT accelerator keeps this model file's engines."""
    return f"{TRT_ENGINE_CACHE_ROOT}/{model_name}-{model_sha256[:CONTENT_HASH_LENGTH]}"


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


def render_config(config: pb.ModelConfig) -> str:
    """Print the message as config.pbtxt and prove it parses back to the same message."""
    text = str(text_format.MessageToString(config))
    if parse_config(text) != config:
        raise ConfigError(f"config.pbtxt of '{config.name}' does not survive a text_format round trip")
    return text


def parse_config(text: str) -> pb.ModelConfig:
    config = pb.ModelConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as error:
        raise ConfigError(f"config.pbtxt does not match Triton's ModelConfig schema: {error}") from None
    return config


def tensor_specs(tensors: Sequence[pb.ModelInput] | Sequence[pb.ModelOutput]) -> tuple[TensorSpec, ...]:
    return tuple(
        TensorSpec(name=t.name, datatype=datatype_name(t.data_type), dims=tuple(t.dims)) for t in tensors
    )

"""config.pbtxt as Triton's own protobuf message (`model_config_pb2.ModelConfig`), never a template.

The build writes one per archive from a catalog entry (model_build.model_config); archive inspection reads
it back and holds it to what the build writes. Every ONNX Runtime key below was checked against
triton-inference-server/onnxruntime_backend (src/onnxruntime.cc): graph `level` -1 = basic, 1 = extended,
2 = disabled and any other value or no `graph` section = all; `parameters` are read as string values.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.core.errors import UserError
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.naming import CONTENT_HASH_LENGTH

GRAPH_LEVELS: dict[str, int | None] = {"disabled": 2, "basic": -1, "extended": 1, "all": None}
CUDNN_CONV_ALGO_SEARCH = {"exhaustive": 0, "heuristic": 1, "default": 2}
EXECUTION_MODES = {"sequential": 0, "parallel": 1}
ARENA_EXTEND_STRATEGIES = {"next_power_of_two": 0, "same_as_requested": 1}
# The accelerator's engines live on the instance disk; a per-model path lets a reload after an MME
# eviction reuse them instead of rebuilding. ONNX Runtime's own engine id hashes the graph's structure
# and file name, not its weights, so the path carries the model file's content hash: a retrained model
# (same graph, new weights) gets a fresh directory and never runs the previous model's engine.
TRT_ENGINE_CACHE_ROOT = "/tmp/triton-ort-trt-cache"


class ConfigError(UserError, ValueError):
    """A config.pbtxt that does not parse against Triton's schema."""


def triton_type(datatype: str) -> int:
    """'FP32' -> pb.TYPE_FP32."""
    return int(pb.DataType.Value(f"TYPE_{datatype}"))


def datatype_name(data_type: int) -> str:
    """pb.TYPE_FP32 -> 'FP32'."""
    return str(pb.DataType.Name(data_type)).removeprefix("TYPE_")


def engine_cache_path(model_name: str, model_sha256: str) -> str:
    """Where ORT's TensorRT accelerator keeps this model file's engines."""
    return f"{TRT_ENGINE_CACHE_ROOT}/{model_name}-{model_sha256[:CONTENT_HASH_LENGTH]}"


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

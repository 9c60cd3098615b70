"""config.pbtxt: Triton's ModelConfig message, catalog settings mapped as the ONNX backend reads them."""

from __future__ import annotations

import pytest
from build_support import entry_of, tiny_cnn, tiny_roberta
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.core.formats import Format
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.triton_config import ConfigError, parse_config, render_config
from triton_mme.model_build.model_config import build_model_config

IMAGE_IN = (TensorSpec(name="input", datatype="FP32", dims=(3, 64, 64)),)
IMAGE_OUT = (TensorSpec(name="output", datatype="FP32", dims=(1000,)),)
MODEL_SHA256 = "0123456789abcdef" + "f" * 48


def _config(
    raw: dict, fmt: Format = Format.ONNX, inputs=IMAGE_IN, outputs=IMAGE_OUT, model_sha256: str = MODEL_SHA256
) -> pb.ModelConfig:
    return build_model_config(
        entry_of(raw), fmt, model_name="m", inputs=inputs, outputs=outputs, model_sha256=model_sha256
    )


def _parameters(config: pb.ModelConfig) -> dict[str, str]:
    return {key: value.string_value for key, value in config.parameters.items()}


@pytest.mark.parametrize(("fmt", "platform", "file_name"), [
    (Format.ONNX, "onnxruntime_onnx", "model.onnx"),
    (Format.TORCHSCRIPT, "pytorch_libtorch", "model.pt"),
    (Format.TENSORRT, "tensorrt_plan", "model.plan"),
])  # fmt: skip
def test_platform_and_model_file_follow_the_format(fmt: Format, platform: str, file_name: str) -> None:
    config = _config(tiny_cnn(), fmt)
    assert (config.platform, config.default_model_filename, config.max_batch_size) == (platform, file_name, 4)
    assert config.input[0].data_type == pb.TYPE_FP32 and list(config.input[0].dims) == [3, 64, 64]
    assert list(config.output[0].dims) == [1000]


def test_default_onnxruntime_settings() -> None:
    config = _config(tiny_cnn())
    # "all" is the backend's default: no graph section at all (level 0 would not mean "all" either).
    assert not config.optimization.HasField("graph")
    assert _parameters(config) == {
        "cudnn_conv_algo_search": "1",
        "execution_mode": "0",
        "arena_extend_strategy": "1",
        "enable_mem_pattern": "1",
        "do_copy_in_default_stream": "1",
        "intra_op_thread_count": "0",
        "inter_op_thread_count": "0",
    }
    assert not config.optimization.execution_accelerators.gpu_execution_accelerator


@pytest.mark.parametrize(("level", "number"), [("basic", -1), ("extended", 1), ("disabled", 2)])
def test_graph_levels_are_the_numbers_the_backend_reads(level: str, number: int) -> None:
    config = _config(tiny_cnn(onnxruntime={"graph_optimization": level}))
    assert config.optimization.graph.level == number


def test_every_onnxruntime_setting_is_mapped() -> None:
    settings = {
        "cudnn_conv_algo_search": "exhaustive",
        "execution_mode": "parallel",
        "arena_extend_strategy": "next_power_of_two",
        "enable_mem_pattern": False,
        "do_copy_in_default_stream": False,
        "intra_op_thread_count": 4,
        "inter_op_thread_count": 2,
        "tensorrt_accelerator": {"enabled": True, "precision": "fp32"},
    }
    config = _config(tiny_cnn(onnxruntime=settings))
    assert _parameters(config) == {
        "cudnn_conv_algo_search": "0",
        "execution_mode": "1",
        "arena_extend_strategy": "0",
        "enable_mem_pattern": "0",
        "do_copy_in_default_stream": "0",
        "intra_op_thread_count": "4",
        "inter_op_thread_count": "2",
    }
    (accelerator,) = config.optimization.execution_accelerators.gpu_execution_accelerator
    assert accelerator.name == "tensorrt"
    assert dict(accelerator.parameters) == {
        "precision_mode": "FP32",
        "trt_engine_cache_enable": "1",
        "trt_engine_cache_path": "/tmp/triton-ort-trt-cache/m-0123456789abcdef",
    }


def test_the_engine_cache_path_follows_the_model_files_content() -> None:
    """ORT's engine id ignores weights: a retrained model must not find the previous model's engines."""
    raw = tiny_cnn(onnxruntime={"tensorrt_accelerator": {"enabled": True}})

    def path(sha256: str) -> str:
        accelerators = _config(raw, model_sha256=sha256).optimization.execution_accelerators
        return str(accelerators.gpu_execution_accelerator[0].parameters["trt_engine_cache_path"])

    assert path("a" * 64) == path("a" * 64)  # the same bytes reuse their engines after an eviction
    assert path("a" * 64) != path("b" * 64)
    with pytest.raises(ValueError, match=r"model_sha256: 'model\.onnx' is not a hex sha256 digest"):
        path("model.onnx")


def test_accelerator_without_engine_cache_has_no_cache_keys() -> None:
    raw = tiny_cnn(onnxruntime={"tensorrt_accelerator": {"enabled": True, "engine_cache": False}})
    (accelerator,) = _config(raw).optimization.execution_accelerators.gpu_execution_accelerator
    assert dict(accelerator.parameters) == {"precision_mode": "FP16"}


def test_onnxruntime_settings_stay_out_of_other_formats() -> None:
    config = _config(tiny_cnn(), Format.TORCHSCRIPT)
    assert not config.parameters and not config.HasField("optimization")


def test_batching_instances_and_warmup() -> None:
    raw = tiny_roberta(
        warmup=True,
        instance_count=2,
        dynamic_batching={"preferred_batch_sizes": [2, 4], "max_queue_delay_microseconds": 500},
    )
    text_inputs = tuple(
        TensorSpec(name=n, datatype="INT64", dims=(16,)) for n in ("input_ids", "attention_mask")
    )
    config = _config(raw, inputs=text_inputs)
    assert list(config.dynamic_batching.preferred_batch_size) == [2, 4]
    assert config.dynamic_batching.max_queue_delay_microseconds == 500
    (group,) = config.instance_group
    assert (group.kind, group.count) == (pb.ModelInstanceGroup.KIND_GPU, 2)
    (warmup,) = config.model_warmup
    assert warmup.batch_size == 1 <= config.max_batch_size
    ids = warmup.inputs["input_ids"]
    assert (ids.data_type, list(ids.dims), ids.zero_data) == (pb.TYPE_INT64, [16], True)


def test_float_warmup_is_random_and_off_by_default() -> None:
    assert _config(tiny_cnn(warmup=True)).model_warmup[0].inputs["input"].random_data
    assert not _config(tiny_cnn()).model_warmup
    assert not _config(tiny_cnn(dynamic_batching={"enabled": False})).HasField("dynamic_batching")


def test_rendered_text_round_trips_through_tritons_schema() -> None:
    config = _config(tiny_cnn(onnxruntime={"tensorrt_accelerator": {"enabled": True}}))
    text = render_config(config)
    assert parse_config(text) == config
    assert text == text_format.MessageToString(config)


def test_text_outside_the_schema_is_rejected() -> None:
    with pytest.raises(ConfigError, match="does not match Triton's ModelConfig schema"):
        parse_config('name: "m"\nmax_batch: 4\n')

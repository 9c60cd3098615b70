"""Inputs the benchmarks generate: payload replies, synthesis catalogs, notebook configs, build command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchmarks import baselines, build, synthesis
from benchmarks.payloads import echo_reply
from triton_mme.client.payloads import decode_response, encode_binary_request, encode_json_request
from triton_mme.core.catalog import parse_catalog
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.triton_config import parse_config


def test_echo_reply_decodes_to_the_request_tensor_in_both_formats() -> None:
    tensor = {"input": np.arange(24, dtype=np.float32).reshape(2, 3, 4)}
    for encode in (encode_json_request, encode_binary_request):
        content_type, body = echo_reply(encode(tensor))
        np.testing.assert_array_equal(decode_response(content_type, body)["input"], tensor["input"])


def test_generated_catalogs_are_valid_and_sized() -> None:
    for size in synthesis.CATALOG_SIZES:
        catalog = parse_catalog(synthesis.generated_catalog(size))
        assert len(catalog.models) == size
        assert {entry.weights.value for entry in catalog.models} == {"random"}
        assert {fmt.value for entry in catalog.models for fmt in entry.formats} == {"onnx"}


def test_resource_counts_read_every_stack_template(tmp_path: Path) -> None:
    (tmp_path / "A.template.json").write_text(json.dumps({"Resources": {"x": {}, "y": {}}}))
    (tmp_path / "B.template.json").write_text(json.dumps({"Resources": {"z": {}}}))
    (tmp_path / "manifest.json").write_text("{}")
    assert synthesis.resource_counts(tmp_path) == {"A": 2, "B": 1}


def test_notebook_config_has_no_onnxruntime_settings_or_warmup() -> None:
    spec = TensorSpec(name="input", datatype="FP32", dims=(3, 224, 224))
    config = parse_config(
        baselines.notebook_config("resnet", max_batch_size=128, inputs=[spec], outputs=[spec])
    )
    assert config.platform == "onnxruntime_onnx"
    assert config.max_batch_size == 128
    assert not config.HasField("optimization")
    assert not config.parameters
    assert not config.model_warmup


def test_build_command_skips_tensorrt_without_it(tmp_path: Path) -> None:
    command = build.build_command(tmp_path / "c.yaml", tmp_path / "out")
    assert command[1:4] == ["-m", "triton_mme", "build"]
    assert command[command.index("--weights") : command.index("--weights") + 2] == ["--weights", "random"]
    if not build.tensorrt_available():
        assert command[-2:] == ["--skip-format", "tensorrt"]
    assert parse_catalog(build.QUICK_CATALOG).models[0].name == "resnet18"

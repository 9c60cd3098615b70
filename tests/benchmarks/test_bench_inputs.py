"""Inputs the benchmarks generate: payload replies, synthesis catalogs, notebook configs, build command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from benchmarks import baselines, build, synthesis
from benchmarks.payloads import echo_reply
from benchmarks.process_tree import run_measured
from triton_mme.catalog import parse_catalog
from triton_mme.client.payloads import decode_response, encode_binary_request, encode_json_request
from triton_mme.core.manifest import ArchiveRecord, TensorSpec
from triton_mme.core.triton_config import parse_config
from triton_mme.model_build import pipeline
from triton_mme.model_build.pipeline import ArchiveOutcome


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


def test_the_tree_peak_sums_a_parent_and_its_children_alive_together() -> None:
    # Each process holds about 200 MB for a second, together: the tree holds at least 400 MB at once.
    hold = "import time; b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(1.5)"
    spawn = (
        f"import subprocess, sys; c = subprocess.Popen([sys.executable, '-c', {hold!r}]); "
        f"exec({hold!r}); c.wait()"
    )
    run = run_measured([sys.executable, "-c", spawn])
    assert run.returncode == 0
    assert run.peak_bytes >= 400 * 2**20


def test_the_build_benchmark_reads_the_builds_own_line_per_archive() -> None:
    record = ArchiveRecord.model_validate(
        {"name": "roberta-large", "format": "onnx", "sha256": "0" * 64,
         "target_model": "roberta-large-onnx-0123456789abcdef.tar.gz", "size_bytes": 1_420_800_000,
         "source": "huggingface:FacebookAI/roberta-large",
         "weights": "random", "max_batch_size": 32, "inputs": [], "outputs": []}
    )  # fmt: skip
    line = pipeline.report_line(ArchiveOutcome(record, cached=False, seconds=312.4, peak_bytes=6 * 2**30))
    (found,) = build.ARCHIVE_LINE.finditer(f"other output\n{line}\n")
    assert (found["name"], found["format"], found["seconds"], found["peak"]) == (
        "roberta-large",
        "onnx",
        "312.4",
        "6.00",
    )

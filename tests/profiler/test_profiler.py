"""`profile` and `publish-performance` on tiny archives: CPU trials here, the GPU path where CUDA exists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import onnx
import pytest
import torch
from moto import mock_aws
from onnx import TensorProto, helper, numpy_helper

from triton_mme import cli
from triton_mme.core.catalog import Format
from triton_mme.core.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest, TensorSpec
from triton_mme.model_build.packaging import write_archive

FEATURES, CLASSES, MAX_BATCH = 4, 3, 4


def config(name: str, platform: str, input_name: str, output_name: str) -> str:
    return (
        f'name: "{name}"\nplatform: "{platform}"\nmax_batch_size: {MAX_BATCH}\n'
        f'input {{ name: "{input_name}" data_type: TYPE_FP32 dims: [{FEATURES}] }}\n'
        f'output {{ name: "{output_name}" data_type: TYPE_FP32 dims: [{CLASSES}] }}\n'
    )


def onnx_model(path: Path) -> Path:
    weights = numpy_helper.from_array(np.ones((FEATURES, CLASSES), dtype=np.float32), "weights")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["input", "weights"], ["logits"])],
        "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", CLASSES])],
        [weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9  # what the serving images' ONNX Runtime reads
    onnx.save(model, path)
    return path


def torchscript_model(path: Path) -> Path:
    module = torch.nn.Linear(FEATURES, CLASSES).eval()
    torch.jit.trace(module, torch.zeros(1, FEATURES)).save(str(path))
    return path


def record(name: str, fmt: str, packed: Any, inputs: str, outputs: str) -> ArchiveRecord:
    return ArchiveRecord(
        name=name,
        format=fmt,
        target_model=packed.path.name,
        sha256=packed.sha256,
        size_bytes=packed.size_bytes,
        source="test",
        weights="random",
        max_batch_size=MAX_BATCH,
        inputs=(TensorSpec(name=inputs, datatype="FP32", dims=(FEATURES,)),),
        outputs=(TensorSpec(name=outputs, datatype="FP32", dims=(CLASSES,)),),
    )


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work, out = tmp_path_factory.mktemp("models"), tmp_path_factory.mktemp("build")
    plan = work / "model.plan"
    plan.write_bytes(b"not a real plan: TensorRT is never loaded on a CPU")
    specs = [
        ("tiny", Format.ONNX, "onnxruntime_onnx", onnx_model(work / "model.onnx"), "input", "logits"),
        (
            "tiny",
            Format.TORCHSCRIPT,
            "pytorch_libtorch",
            torchscript_model(work / "model.pt"),
            "INPUT__0",
            "OUTPUT__0",
        ),
        ("tiny", Format.TENSORRT, "tensorrt_plan", plan, "input", "logits"),
    ]
    records = []
    for name, fmt, platform, model_file, inputs, outputs in specs:
        model_dir = f"{name}-{fmt.value}"
        packed = write_archive(
            out,
            name=name,
            fmt=fmt,
            model_dir=model_dir,
            config_text=config(model_dir, platform, inputs, outputs),
            model_file=model_file,
            model_file_name=model_file.name,
        )
        records.append(record(name, fmt.value, packed, inputs, outputs))
    (out / MANIFEST_FILE_NAME).write_text(Manifest(archives=tuple(records)).to_json())
    return out


def run(*argv: str) -> int:
    return cli.main(list(argv))


@pytest.fixture(scope="module")
def cpu_figures(build_dir: Path) -> dict[str, Any]:
    assert (
        run("profile", "--from", str(build_dir), "--device", "cpu", "--iterations", "5", "--warmup", "1") == 0
    )
    return dict(json.loads((build_dir / "performance.json").read_text()))


def test_cpu_profile_measures_onnx_and_torchscript_with_units(cpu_figures: dict[str, Any]) -> None:
    by_format = {archive["format"]: archive for archive in cpu_figures["archives"]}
    for fmt in ("onnx", "torchscript"):
        archive = by_format[fmt]
        assert archive["load_time"]["unit"] == "ms" and archive["load_time"]["value"] > 0
        assert [b["batch_size"] for b in archive["batches"]] == [1, MAX_BATCH]
        for batch in archive["batches"]:
            assert batch["latency_p50"]["unit"] == batch["latency_p99"]["unit"] == "ms"
            assert 0 < batch["latency_p50"]["value"] <= batch["latency_p99"]["value"]
            assert batch["throughput"] == {
                "value": pytest.approx(batch["throughput"]["value"]),
                "unit": "inferences/s",
            }
            assert batch["throughput"]["value"] > 0
        assert "gpu_memory" not in archive  # measured only on a GPU


def test_tensorrt_is_recorded_as_skipped_with_a_reason_on_cpu(cpu_figures: dict[str, Any]) -> None:
    (archive,) = [a for a in cpu_figures["archives"] if a["format"] == "tensorrt"]
    assert archive["skipped"] == "a TensorRT plan runs only on a CUDA GPU"
    assert "batches" not in archive


def test_figures_name_the_manifest_and_the_environment(cpu_figures: dict[str, Any], build_dir: Path) -> None:
    assert cpu_figures["manifest_sha256"] == Manifest.read(build_dir / MANIFEST_FILE_NAME).sha256
    environment = cpu_figures["environment"]
    assert environment["device"] == "cpu"
    assert environment["torch"] == torch.__version__ and environment["onnxruntime"]
    targets = {a["target_model"] for a in cpu_figures["archives"]}
    assert targets == {r.target_model for r in Manifest.read(build_dir / MANIFEST_FILE_NAME).archives}


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown where no GPU exists")
def test_profile_without_a_gpu_fails_in_one_line_unless_cpu_is_asked(
    build_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "figures.json"
    assert run("profile", "--from", str(build_dir), "--out", str(out)) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: no CUDA GPU is visible") and "--device cpu" in error
    assert error.count("\n") == 1
    assert not out.exists()


def test_profile_of_a_directory_without_a_build_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("profile", "--from", str(tmp_path), "--device", "cpu") == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: {tmp_path / MANIFEST_FILE_NAME}: cannot read the build manifest")
    assert error.count("\n") == 1
    assert not (tmp_path / "performance.json").exists()


def test_bad_iterations_are_refused(build_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        run("profile", "--from", str(build_dir), "--iterations", "0")
    assert exit_status.value.code == 2
    assert "'0' is not allowed; a whole number of at least 1" in capsys.readouterr().err


def test_an_archive_its_runtime_rejects_fails_in_one_line(
    build_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not an onnx graph")
    packed = write_archive(
        tmp_path / "build",
        name="broken",
        fmt=Format.ONNX,
        model_dir="broken-onnx",
        config_text=config("broken-onnx", "onnxruntime_onnx", "input", "logits"),
        model_file=broken,
        model_file_name="model.onnx",
    )
    manifest = Manifest(archives=(record("broken", "onnx", packed, "input", "logits"),))
    (tmp_path / "build" / MANIFEST_FILE_NAME).write_text(manifest.to_json())

    assert run("profile", "--from", str(tmp_path / "build"), "--device", "cpu") == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: {packed.path.name}: does not load and run on cpu: ")
    assert error.count("\n") == 1


@mock_aws
def test_publish_puts_the_figures_beside_the_manifest(
    build_dir: Path, cpu_figures: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="store")

    assert run("publish-performance", "--from", str(build_dir), "--bucket", "store") == 0

    digest = cpu_figures["manifest_sha256"]
    published = json.loads(
        s3.get_object(Bucket="store", Key=f"manifests/{digest}.performance.json")["Body"].read()
    )
    assert published == cpu_figures
    # Written once, by manifest: no "current" copy that would follow the last build instead of the endpoint.
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket="store")["Contents"]]
    assert listed == [f"manifests/{digest}.performance.json"]
    assert run("publish-performance", "--from", str(build_dir), "--bucket", "store") == 0


@mock_aws
def test_publish_refuses_figures_of_another_build(
    build_dir: Path, cpu_figures: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "build"
    stale.mkdir()
    (stale / MANIFEST_FILE_NAME).write_text(Manifest().to_json())
    (stale / "performance.json").write_text(json.dumps(cpu_figures))

    assert run("publish-performance", "--from", str(stale), "--bucket", "store") == 1
    assert "run profile again" in capsys.readouterr().err


@pytest.mark.gpu
def test_gpu_profile_records_gpu_memory_and_the_gpu(build_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "gpu.json"
    assert run("profile", "--from", str(build_dir), "--out", str(out), "--iterations", "5") == 0
    figures = json.loads(out.read_text())
    assert figures["environment"]["gpu"] and figures["environment"]["compute_capability"].startswith("sm_")
    (torchscript,) = [a for a in figures["archives"] if a["format"] == "torchscript"]
    assert torchscript["gpu_memory"]["unit"] == "MiB" and torchscript["gpu_memory"]["value"] >= 0
    assert torchscript["batches"][0]["latency_p50"]["value"] > 0

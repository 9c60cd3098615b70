"""The serving check's parts that need no server: the largest batch, the tolerance of each archive, the CUDA
check through the driver API, and the SageMaker target's start-up, played by a fake `serve` on loopback."""

from __future__ import annotations

import ctypes
import json
import socket
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.core.golden import GoldenData
from triton_mme.core.manifest import ArchiveRecord, TensorSpec
from triton_mme.core.tolerances import FP16, FP32, GPU_FP32
from triton_mme.core.triton_config import parse_config
from triton_mme.serving_check import check, gpu
from triton_mme.serving_check.targets import SageMakerTriton, TargetError


def record(
    inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...], max_batch_size: int, **extra: Any
) -> ArchiveRecord:
    return ArchiveRecord(
        name="m", format=extra.pop("format", "onnx"), target_model="m-onnx-0123456789abcdef.tar.gz",
        sha256="0" * 64, size_bytes=1, source="torchvision:m", weights="random",
        max_batch_size=max_batch_size, inputs=inputs, outputs=outputs, **extra,
    )  # fmt: skip


def golden_of(
    shapes_in: dict[str, tuple[tuple[int, ...], type]], shapes_out: dict[str, tuple[tuple[int, ...], type]]
) -> GoldenData:
    return GoldenData(
        {k: np.zeros((2, *s), t) for k, (s, t) in shapes_in.items()},
        {k: np.zeros((2, *s), t) for k, (s, t) in shapes_out.items()},
    )


def test_the_largest_batch_is_what_invoke_endpoint_carries_both_ways_within_max_batch_size() -> None:
    image = golden_of({"input": ((3, 224, 224), np.float32)}, {"output": ((1000,), np.float32)})
    resnet = record((TensorSpec(name="input", datatype="FP32", dims=(3, 224, 224)),),
                    (TensorSpec(name="output", datatype="FP32", dims=(1000,)),), 128)  # fmt: skip
    # 602,112 bytes per picture: ten fit in 6 MiB with the JSON header, eleven do not.
    assert check.largest_batch(resnet, image) == 10
    text = golden_of(
        {"input_ids": ((512,), np.int64), "attention_mask": ((512,), np.int64)},
        {"last_hidden_state": ((512, 1024), np.float32), "pooler_output": ((1024,), np.float32)},
    )
    roberta = record((), (), 32)
    # The reply bounds it: 2 MiB of hidden states per sample.
    assert check.largest_batch(roberta, text) == 2
    assert check.largest_batch(record((), (), 4), image) == 4
    huge = golden_of({"input": ((4, 1024, 1024), np.float32)}, {"output": ((1,), np.float32)})
    assert (
        check.largest_batch(record((), (), 8), huge) == 1
    )  # sent anyway: the check talks to Triton directly


class Target:
    def __init__(self, on_gpu: bool):
        self.on_gpu = on_gpu


def config(accelerator: str | None) -> pb.ModelConfig:
    text = 'name: "m"\nplatform: "onnxruntime_onnx"\n'
    if accelerator:
        text += (
            'optimization { execution_accelerators { gpu_execution_accelerator { name: "tensorrt" '
            f'parameters {{ key: "precision_mode" value: "{accelerator}" }} }} }} }}\n'
        )
    return parse_config(text)


@pytest.mark.parametrize(
    ("fmt", "details", "accelerator", "on_gpu", "expected"),
    [
        ("onnx", {}, None, False, FP32),
        ("onnx", {}, "FP16", False, FP32),  # the CPU stand-in drops GPU accelerators
        ("onnx", {}, None, True, GPU_FP32),
        ("onnx", {}, "FP16", True, FP16),
        ("onnx", {}, "FP32", True, GPU_FP32),
        ("torchscript", {}, None, True, GPU_FP32),
        ("tensorrt", {"precision": "fp16"}, None, True, FP16),
        ("tensorrt", {"precision": "fp32"}, None, True, GPU_FP32),
    ],
)
def test_each_archive_gets_the_tolerance_of_its_format_precision_and_device(
    fmt: str, details: dict[str, str], accelerator: str | None, on_gpu: bool, expected: Any
) -> None:
    archive = record((), (), 4, format=fmt, details=details)
    assert check._tolerance(archive, config(accelerator), Target(on_gpu)) == expected  # type: ignore[arg-type]


class FakeDriver:
    def __init__(self, init: int = 0, version: int = 12090, devices: int = 1):
        self._init, self._version, self._devices = init, version, devices

    def init(self) -> int:
        return self._init

    def version(self) -> int:
        return self._version

    def device_count(self) -> int:
        return self._devices

    def device_name(self, index: int) -> str:
        return "NVIDIA A10G"


@pytest.fixture(autouse=True)
def no_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu, "driver_version", lambda: "570.172.08")


def test_cuda_is_ready_when_the_driver_runs_the_images_cuda() -> None:
    report = gpu.check_cuda("25.04-py3", FakeDriver(version=12090))
    assert (
        report.line()
        == "CUDA ready: NVIDIA A10G, NVIDIA driver 570.172.08, CUDA 12.9 (the image needs 12.9.0)"
    )


@pytest.mark.parametrize(
    ("driver", "reason"),
    [
        (FakeDriver(version=12080), "the driver runs CUDA 12.8 only; it needs a newer driver, or the image's "
                                     "forward-compatibility libraries first on LD_LIBRARY_PATH"),
        (FakeDriver(init=803), "cuInit failed with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
        (FakeDriver(init=999), "cuInit failed with CUresult 999"),
        (FakeDriver(devices=0), "no GPU visible"),
    ],
)  # fmt: skip
def test_unusable_cuda_stops_in_one_line_with_the_driver_and_the_need(
    driver: FakeDriver, reason: str
) -> None:
    with pytest.raises(gpu.CudaUnusable) as stopped:
        gpu.check_cuda("25.04-py3", driver)
    message = str(stopped.value)
    assert message.startswith(
        "CUDA is unusable here (NVIDIA driver 570.172.08, 25.04-py3 needs CUDA 12.9.0): "
    )
    assert reason in message and "\n" not in message


def test_without_a_driver_libcuda_is_named() -> None:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        pass
    else:
        pytest.skip("a real NVIDIA driver is present; this test is for machines without one")
    with pytest.raises(gpu.CudaUnusable, match=r"CUDA is unusable here: libcuda\.so\.1 cannot be loaded"):
        gpu.check_cuda("25.04-py3")


FAKE_SERVE = textwrap.dedent(
    """
    import http.server, json, os, sys
    with open(sys.argv[1], "w") as seen:
        json.dump({k: v for k, v in os.environ.items() if k.startswith("SAGEMAKER")}, seen)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args): pass
        def _answer(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        do_GET = do_POST = do_DELETE = _answer

    server = http.server.HTTPServer(("127.0.0.1", int(os.environ["SAGEMAKER_BIND_TO_PORT"])), Handler)
    for _ in range(50):  # bounded: the test sends a few requests, then stops the process
        server.handle_request()
    """
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_sagemaker_target_starts_serve_in_multi_model_mode_and_waits_for_ping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve, seen = tmp_path / "serve.py", tmp_path / "environment.json"
    serve.write_text(FAKE_SERVE)
    monkeypatch.setenv("SAGEMAKER_TRITON_LOG_VERBOSE", "0")  # the endpoint's container environment passes on
    port = free_port()
    target = SageMakerTriton(
        log_path=tmp_path / "serve.log", triton_tag="25.04-py3",
        command=[sys.executable, str(serve), str(seen)], port=port,
    )  # fmt: skip
    with target:
        assert target.routes.load("m.tar.gz", tmp_path).ok
    assert json.loads(seen.read_text()) == {
        "SAGEMAKER_MULTI_MODEL": "true",
        "SAGEMAKER_BIND_TO_PORT": str(port),
        "SAGEMAKER_TRITON_LOG_VERBOSE": "0",
    }
    assert target.server.startswith("sagemaker-tritonserver:25.04-py3")


def test_a_server_that_exits_during_start_up_stops_with_its_error_line(tmp_path: Path) -> None:
    crash = tmp_path / "crash.py"
    crash.write_text(
        "import sys\nprint('I0101 starting')\n"
        "print('E0101 failed to load backend onnxruntime')\nsys.exit(3)\n"
    )
    target = SageMakerTriton(
        log_path=tmp_path / "serve.log",
        triton_tag="25.04-py3",
        command=[sys.executable, str(crash)],
        port=free_port(),
    )
    with pytest.raises(TargetError) as stopped:
        target.start()
    assert (
        str(stopped.value)
        == "tritonserver exited during start-up (status 3): E0101 failed to load backend onnxruntime"
    )


def test_outside_the_image_there_is_no_serve_to_start(tmp_path: Path) -> None:
    target = SageMakerTriton(
        log_path=None, triton_tag="25.04-py3", command=["no-such-serve"], port=free_port()
    )
    expected = (
        r"cannot start 'no-such-serve' \(No such file or directory\); --server sagemaker runs inside the "
        r"sagemaker-tritonserver image"
    )
    with pytest.raises(TargetError, match=expected):
        target.start()


ABSENT_ON_THE_CHECK_RUNNER = textwrap.dedent(
    """
    import importlib.abc, sys
    ABSENT = ("torch", "torchvision", "transformers", "onnxruntime", "onnx", "triton_mme.model_build",
              "triton_mme.local_triton", "benchmarks")
    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if any(name == a or name.startswith(a + ".") for a in ABSENT):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    sys.meta_path.insert(0, Absent())
    """
)


def test_what_the_gpu_stage_runs_needs_neither_pytorch_nor_the_build_nor_the_local_triton() -> None:
    from boundaries import loaded_after

    # The check stage ships core, client, serving_check and store into an image without PyTorch: with the
    # rest missing, the command line still starts and the check's modules import.
    loaded = loaded_after(
        ABSENT_ON_THE_CHECK_RUNNER
        + "from triton_mme.cli import parser\n"
        + "for command in ('serving-check --server sagemaker', 'cuda-check', 'publish-report --bucket b'):\n"
        + "    parser().parse_args(command.split())\n"
        + "from triton_mme.serving_check import check, gpu, targets\nfrom triton_mme.store import stages\n"
        + "targets.SageMakerTriton(log_path=None, triton_tag='25.04-py3')"
    )
    assert "triton_mme.serving_check.check" in loaded and "triton_mme.store.stages" in loaded


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        if "==" in requirement and not requirement.startswith("-"):
            name, version = requirement.split("==")
            found[name.split("[")[0].lower()] = version.strip()
    return found


def test_the_check_stage_installs_the_same_pins_as_the_rest_of_the_project() -> None:
    root = Path(__file__).resolve().parents[2]
    runner = root / "triton_mme_cdk" / "runner_requirements"
    check = pins(runner / "requirements-check.txt")
    others: dict[str, str] = {}
    for path in (
        runner / "requirements-build.txt",
        root / "requirements-client.txt",
        root / "requirements.txt",
    ):
        others |= pins(path)
    assert check and {name: others.get(name) for name in check} == check
    assert not {"torch", "onnxruntime", "onnx", "transformers"} & set(check)  # the archives run in Triton

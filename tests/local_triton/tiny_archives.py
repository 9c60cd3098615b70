"""Small random-initialised models and archives in the build stage's layout, for the local Triton tests."""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

MAX_BATCH_SIZE = 4
FEATURES = 8


@dataclass(frozen=True)
class BuiltArchive:
    target_model: str
    format: str
    input_name: str
    output_name: str
    model_file: Path  # the exported file, for running it directly

    def reference(self, batch: np.ndarray) -> np.ndarray:
        if self.format == "onnx":
            import onnxruntime as ort

            session = ort.InferenceSession(str(self.model_file), providers=["CPUExecutionProvider"])
            return np.asarray(session.run([self.output_name], {self.input_name: batch})[0])
        module = torch.jit.load(str(self.model_file))
        with torch.inference_mode():
            return np.asarray(module(torch.from_numpy(batch)).numpy())


class TinyNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(FEATURES, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def tiny_config(
    name: str, platform: str, file_name: str, input_name: str, output_name: str
) -> mc.ModelConfig:
    """Shaped like the build stage's config: GPU instances, dynamic batching, warm-up, file name."""
    config = mc.ModelConfig(
        name=name, platform=platform, max_batch_size=MAX_BATCH_SIZE, default_model_filename=file_name
    )
    config.input.add(name=input_name, data_type=mc.TYPE_FP32, dims=[FEATURES])
    config.output.add(name=output_name, data_type=mc.TYPE_FP32, dims=[3])
    config.instance_group.add(kind=mc.ModelInstanceGroup.KIND_GPU, count=1)
    config.dynamic_batching.max_queue_delay_microseconds = 100
    warmup = config.model_warmup.add(name="warmup", batch_size=1)
    warmup.inputs[input_name].data_type = mc.TYPE_FP32
    warmup.inputs[input_name].dims.extend([FEATURES])
    warmup.inputs[input_name].random_data = True
    if platform == "onnxruntime_onnx":
        accelerator = config.optimization.execution_accelerators.gpu_execution_accelerator.add(
            name="tensorrt"
        )
        accelerator.parameters["precision_mode"] = "FP16"
        config.parameters["cudnn_conv_algo_search"].string_value = "1"
        config.parameters["intra_op_thread_count"].string_value = "1"
    return config


def pack(out: Path, target_model: str, config: mc.ModelConfig, model: Path, file_name: str) -> None:
    with tarfile.open(out / target_model, "w:gz") as tar:
        config_file = model.with_name("config.pbtxt")
        config_file.write_text(text_format.MessageToString(config))
        tar.add(config_file, f"{config.name}/config.pbtxt")
        tar.add(model, f"{config.name}/1/{file_name}")


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention `text` (tritonserver and stubs carry their paths)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in command and state != "Z":
            found.append(f"{entry.name}: {command[:200]}")
    return found

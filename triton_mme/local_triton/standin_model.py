"""CPU stand-in for Triton's ONNX Runtime and PyTorch backends, run by the python backend as `model.py`.

It loads the archive's own model file from its version directory (model.onnx with ONNX Runtime on CPU,
model.pt with TorchScript) and maps request tensors to the model by name, as those backends do.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

ARTIFACT_PARAMETER = "local_standin_model_file"  # kept equal to standin.ARTIFACT_PARAMETER
# One path component inside the version directory (kept equal to standin.MODEL_FILE_NAME).
MODEL_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
_ORT_TYPES = {
    "tensor(float)": "TYPE_FP32",
    "tensor(float16)": "TYPE_FP16",
    "tensor(double)": "TYPE_FP64",
    "tensor(int64)": "TYPE_INT64",
    "tensor(int32)": "TYPE_INT32",
    "tensor(int16)": "TYPE_INT16",
    "tensor(int8)": "TYPE_INT8",
    "tensor(uint8)": "TYPE_UINT8",
    "tensor(bool)": "TYPE_BOOL",
}


def _parameter(config: dict[str, Any], key: str) -> str | None:
    value = config.get("parameters", {}).get(key)
    return value.get("string_value") if isinstance(value, dict) else None


def _by_index(names: list[str]) -> list[str]:
    """Triton's PyTorch backend binds `<name>__<index>` tensors by index, others in config order."""
    indexed = [re.fullmatch(r".*__(\d+)", name) for name in names]
    if all(indexed):
        return [name for _, name in sorted((int(m.group(1)), m.string) for m in indexed if m)]
    return names


class _OnnxRunner:
    def __init__(self, path: Path, config: dict[str, Any]):
        import onnxruntime as ort

        options = ort.SessionOptions()
        # The same mapping as Triton's ONNX Runtime backend (optimization { graph { level } }).
        level = int(config.get("optimization", {}).get("graph", {}).get("level", 0))
        levels = {-1: "ORT_ENABLE_BASIC", 1: "ORT_ENABLE_EXTENDED", 2: "ORT_DISABLE_ALL"}
        options.graph_optimization_level = getattr(
            ort.GraphOptimizationLevel, levels.get(level, "ORT_ENABLE_ALL")
        )
        for key, attribute in (
            ("intra_op_thread_count", "intra_op_num_threads"),
            ("inter_op_thread_count", "inter_op_num_threads"),
        ):
            value = _parameter(config, key)
            if value is not None:
                setattr(options, attribute, int(value))
        if _parameter(config, "execution_mode") == "1":
            options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
        for key, attribute in (
            ("enable_mem_arena", "enable_cpu_mem_arena"),
            ("enable_mem_pattern", "enable_mem_pattern"),
        ):
            value = _parameter(config, key)
            if value is not None:
                setattr(options, attribute, value.lower() in ("1", "true"))
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._check_against(config)

    def _check_against(self, config: dict[str, Any]) -> None:
        # Triton's ONNX Runtime backend refuses to load a model whose config disagrees with the graph.
        graph = {t.name: t for t in [*self.session.get_inputs(), *self.session.get_outputs()]}
        for tensor in [*config.get("input", []), *config.get("output", [])]:
            found = graph.get(tensor["name"])
            if found is None:
                raise pb_utils.TritonModelException(
                    f"tensor '{tensor['name']}' of config.pbtxt is not in model.onnx; it has {sorted(graph)}"
                )
            if _ORT_TYPES.get(found.type, found.type) != tensor["data_type"]:
                raise pb_utils.TritonModelException(
                    f"tensor '{tensor['name']}': config.pbtxt says {tensor['data_type']}, "
                    f"model.onnx has {found.type}"
                )

    def run(self, feeds: dict[str, np.ndarray], output_names: list[str]) -> dict[str, np.ndarray]:
        return dict(zip(output_names, self.session.run(output_names, feeds), strict=True))


class _TorchScriptRunner:
    def __init__(self, path: Path, config: dict[str, Any]):
        import torch

        self.torch = torch
        # The loader (local_triton.loader) ran the model check (archive_inspection) on this very file, the
        # code walked before anything loads it, before Triton was asked to load the model.
        self.module = torch.jit.load(str(path), map_location="cpu").eval()
        self.input_order = _by_index([t["name"] for t in config["input"]])

    def run(self, feeds: dict[str, np.ndarray], output_names: list[str]) -> dict[str, np.ndarray]:
        with self.torch.inference_mode():
            result = self.module(*(self.torch.from_numpy(feeds[name]) for name in self.input_order))
        results = result if isinstance(result, tuple | list) else (result,)
        return {name: tensor.numpy() for name, tensor in zip(_by_index(output_names), results, strict=False)}


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        self.config = json.loads(args["model_config"])
        version_dir = Path(args["model_repository"]) / args["model_version"]
        file_name = _parameter(self.config, ARTIFACT_PARAMETER)
        candidates = [file_name] if file_name else ["model.onnx", "model.pt"]
        path = next((version_dir / name for name in candidates if (version_dir / name).is_file()), None)
        # Never a file outside the version directory, whatever the config says (`../../x`, a symbolic
        # link): the name is one path component, and the file it resolves to is in that directory.
        if file_name is not None and (
            not MODEL_FILE_NAME.fullmatch(file_name)
            or (path is not None and path.resolve().parent != version_dir.resolve())
        ):
            raise pb_utils.TritonModelException(
                f"parameters.{ARTIFACT_PARAMETER} {file_name!r} is not a file name in {version_dir}; "
                "allowed one file name there"
            )
        if path is None:
            raise pb_utils.TritonModelException(f"none of {candidates} in {version_dir}")
        runner = _OnnxRunner if path.suffix == ".onnx" else _TorchScriptRunner
        self.runner: _OnnxRunner | _TorchScriptRunner = runner(path, self.config)
        self.input_names = [t["name"] for t in self.config["input"]]
        self.output_names = [t["name"] for t in self.config["output"]]
        self.output_types = {
            t["name"]: pb_utils.triton_string_to_numpy(t["data_type"]) for t in self.config["output"]
        }
        self.batching = int(self.config.get("max_batch_size", 0)) > 0

    def _feeds(self, request: Any) -> dict[str, np.ndarray]:
        tensors = {name: pb_utils.get_input_tensor_by_name(request, name) for name in self.input_names}
        return {name: tensor.as_numpy() for name, tensor in tensors.items() if tensor is not None}

    def _response(self, outputs: dict[str, np.ndarray]) -> Any:
        tensors = [
            pb_utils.Tensor(name, np.ascontiguousarray(outputs[name], dtype=self.output_types[name]))
            for name in self.output_names
            if name in outputs
        ]
        return pb_utils.InferenceResponse(output_tensors=tensors)

    def _run_one(self, feeds: dict[str, np.ndarray]) -> Any:
        try:
            return self._response(self.runner.run(feeds, self.output_names))
        except Exception as error:  # the caller gets the runtime's message as an inference error
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"{type(error).__name__}: {error}"))

    def execute(self, requests: list[Any]) -> list[Any]:
        feeds = [self._feeds(request) for request in requests]
        if len(feeds) > 1 and self.batching and self._stackable(feeds):
            # Run what the dynamic batcher gathered as one batch, as the ONNX Runtime and PyTorch backends do.
            sizes = [len(next(iter(f.values()))) for f in feeds]
            merged = {name: np.concatenate([f[name] for f in feeds]) for name in feeds[0]}
            try:
                outputs = self.runner.run(merged, self.output_names)
            except Exception:
                return [self._run_one(f) for f in feeds]
            bounds = np.cumsum(sizes)[:-1]
            parts = {name: np.split(value, bounds) for name, value in outputs.items()}
            return [self._response({name: parts[name][i] for name in parts}) for i in range(len(feeds))]
        return [self._run_one(f) for f in feeds]

    @staticmethod
    def _stackable(feeds: list[dict[str, np.ndarray]]) -> bool:
        first = feeds[0]
        return all(
            f.keys() == first.keys() and all(f[n].shape[1:] == first[n].shape[1:] for n in first)
            for f in feeds
        )

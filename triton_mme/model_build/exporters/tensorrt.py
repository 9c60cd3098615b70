"""TensorRT plan from the plain ONNX export, written against TensorRT's documented Python API (10.x).

A plan runs only with the TensorRT version and GPU architecture that built it, so the build refuses a
TensorRT whose major.minor differs from the one in the serving Triton image, and records version,
GPU name and compute capability in the manifest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from triton_mme.catalog import ModelEntry
from triton_mme.core.formats import Format
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.platform import (
    PLATFORM,
    triton_release_of,
)
from triton_mme.model_build.exporters import ExportContext, ExportedModel, ExportError, verification_batches
from triton_mme.model_build.parity import FP16, FP32, compare
from triton_mme.model_build.sources import LoadedModel

SKIP_HINT = "pass --skip-format tensorrt to build the other formats"

_TORCH_DTYPES = {"FP32": torch.float32, "FP16": torch.float16, "INT64": torch.int64, "INT32": torch.int32}


def major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def check_tensorrt_version(installed: str, triton_tag: str) -> str:
    """The TensorRT version the serving image runs; raises unless `installed` has its major.minor."""
    if not re.match(r"^\d{2}\.\d{2}(?:-.*)?$", triton_tag.strip()):
        raise ExportError(f"Triton image tag '{triton_tag}': expected YY.MM or YY.MM-py3 (e.g. 25.04-py3)")
    image = triton_release_of(triton_tag)
    if image is None or image.tensorrt is None:
        known = ", ".join(i.release for i in PLATFORM.triton_images.values() if i.tensorrt)
        raise ExportError(
            f"Triton image tag '{triton_tag}': TensorRT version unknown; known releases: {known}"
        )
    expected = image.tensorrt
    if major_minor(installed) != major_minor(expected):
        raise ExportError(
            f"TensorRT {installed} is installed but Triton {image.release} runs TensorRT {expected}: a plan "
            f"built here would not load there; install tensorrt {major_minor(expected)}.x or {SKIP_HINT}"
        )
    return expected


def require_tensorrt(triton_tag: str) -> ModuleType:
    """Fail fast, in one line, when this machine cannot build plans for the target image."""
    if not torch.cuda.is_available():
        raise ExportError(f"format tensorrt needs a CUDA GPU and none is available; {SKIP_HINT}")
    try:
        import tensorrt
    except ImportError:
        raise ExportError(
            f"format tensorrt needs the TensorRT Python package (import tensorrt failed); {SKIP_HINT}"
        ) from None
    check_tensorrt_version(str(tensorrt.__version__), triton_tag)
    return tensorrt


def optimal_batch(entry: ModelEntry) -> int:
    """The batch the dynamic batcher aims for: the largest preferred size, else max_batch_size."""
    return max(entry.dynamic_batching.preferred_batch_sizes, default=entry.max_batch_size)


def profile_shapes(entry: ModelEntry, inputs: Sequence[TensorSpec]) -> dict[str, tuple[tuple[int, ...], ...]]:
    """min/opt/max shape per input: batch 1 .. max_batch_size (Triton never sends more)."""
    shapes: dict[str, tuple[tuple[int, ...], ...]] = {}
    for spec in inputs:
        if any(d < 1 for d in spec.dims):
            raise ExportError(
                f"input '{spec.name}' has a dynamic non-batch dimension {spec.dims}; give it a size"
            )
        shapes[spec.name] = tuple(
            (batch, *spec.dims) for batch in (1, optimal_batch(entry), entry.max_batch_size)
        )
    return shapes


def build_plan(trt: ModuleType, onnx_file: Path, entry: ModelEntry, inputs: Sequence[TensorSpec]) -> bytes:
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(0)  # TensorRT 10: explicit batch is the only mode
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(onnx_file)):
        first = parser.get_error(0) if parser.num_errors else "unknown error"
        raise ExportError(f"TensorRT cannot parse the ONNX export: {first}")
    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, entry.tensorrt.workspace_mib << 20)
    if entry.tensorrt.precision == "fp16":
        config.set_flag(trt.BuilderFlag.FP16)
    profile = builder.create_optimization_profile()
    for name, (smallest, optimal, largest) in profile_shapes(entry, inputs).items():
        profile.set_shape(name, smallest, optimal, largest)
    config.add_optimization_profile(profile)
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        raise ExportError(
            "TensorRT could not build an engine from the ONNX export (see the TensorRT log above)"
        )
    return bytes(plan)


def run_plan(
    trt: ModuleType, plan: bytes, feeds: dict[str, Any], outputs: Sequence[TensorSpec]
) -> dict[str, Any]:
    """One inference on the GPU with torch-allocated buffers (execute_async_v3)."""
    logger = trt.Logger(trt.Logger.WARNING)
    engine = trt.Runtime(logger).deserialize_cuda_engine(plan)
    context = engine.create_execution_context()
    device_inputs = {name: torch.from_numpy(value).cuda() for name, value in feeds.items()}
    for name, tensor in device_inputs.items():
        context.set_input_shape(name, tuple(tensor.shape))
        context.set_tensor_address(name, tensor.data_ptr())
    results = {}
    for spec in outputs:
        shape = tuple(context.get_tensor_shape(spec.name))
        results[spec.name] = torch.empty(shape, dtype=_TORCH_DTYPES[spec.datatype], device="cuda")
        context.set_tensor_address(spec.name, results[spec.name].data_ptr())
    stream = torch.cuda.current_stream()
    if not context.execute_async_v3(stream.cuda_stream):
        raise ExportError("TensorRT execution failed")
    stream.synchronize()
    return {name: tensor.float().cpu().numpy() for name, tensor in results.items()}


def gpu_facts() -> dict[str, str]:
    major, minor = torch.cuda.get_device_capability(0)
    return {"gpu_name": torch.cuda.get_device_name(0), "compute_capability": f"{major}.{minor}"}


class TensorRTExporter:
    format = Format.TENSORRT

    def export(self, loaded: LoadedModel, context: ExportContext) -> ExportedModel:
        """The ONNX graph the plan is built from (the plan itself needs no PyTorch: see optimise)."""
        from triton_mme.model_build.exporters.onnx import export_plain

        require_tensorrt(context.triton_tag)
        # Built from the unfused export: ONNX Runtime's contrib fusions are not ONNX operators.
        onnx_file = context.exported.get("onnx-plain") or export_plain(loaded, context.workdir / "plain.onnx")
        context.exported["onnx-plain"] = onnx_file
        return ExportedModel(Format.TENSORRT, onnx_file, (), ())  # tensors read in optimise, module released

    def optimise(self, loaded: LoadedModel, exported: ExportedModel, context: ExportContext) -> ExportedModel:
        from triton_mme.model_build.exporters.onnx import graph_tensors

        trt = require_tensorrt(context.triton_tag)
        inputs, outputs = graph_tensors(exported.model_file)
        path = context.workdir / "model.plan"
        path.write_bytes(build_plan(trt, exported.model_file, loaded.entry, inputs))
        details = {
            "tensorrt_version": str(trt.__version__),
            "triton_image_tensorrt": check_tensorrt_version(str(trt.__version__), context.triton_tag),
            "triton_tag": context.triton_tag,
            "precision": loaded.entry.tensorrt.precision,
            "profile": {
                name: [list(s) for s in shapes]
                for name, shapes in profile_shapes(loaded.entry, inputs).items()
            },
            **gpu_facts(),
        }
        return ExportedModel(Format.TENSORRT, path, inputs, outputs, details)

    def verify(self, loaded: LoadedModel, exported: ExportedModel) -> dict[str, Any]:
        import tensorrt as trt

        tolerance = FP16 if loaded.entry.tensorrt.precision == "fp16" else FP32
        plan = exported.model_file.read_bytes()
        errors: dict[str, float] = {}
        for batch in verification_batches(loaded.entry.max_batch_size):
            expected = loaded.expected(batch)
            produced = run_plan(trt, plan, expected.feeds, exported.outputs)
            for name, error in compare(
                f"tensorrt batch {batch}", produced, expected.outputs, tolerance
            ).items():
                errors[name] = max(errors.get(name, 0.0), error)
        return {
            "parity": {"runtime": "tensorrt (GPU)", "tolerance": vars(tolerance), "max_abs_error": errors}
        }

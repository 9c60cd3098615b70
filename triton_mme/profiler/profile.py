"""Measure every archive of a build on this machine's GPU: load time, latency, throughput, GPU memory.

Each archive is timed as an endpoint would use it: unpack, load, first inference (load time); then
host-to-host inference (inputs copied in, outputs copied out) at a few batch sizes. Every figure is
recorded with its unit, next to the GPU, driver and library versions it was measured with.
"""

from __future__ import annotations

import gc
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from triton_mme.core.archive import ArchiveContents, extract_archive, read_archive
from triton_mme.core.catalog import Format
from triton_mme.core.errors import UserError, first_line
from triton_mme.core.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest
from triton_mme.core.samples import sample_inputs

PERFORMANCE_SCHEMA_VERSION = 1
BATCH_SIZES = (1, 8, 32)
Runner = Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]


class ProfileError(UserError):
    """Profiling cannot go ahead; the message is one line."""


class Skipped(Exception):
    """This archive cannot be measured here; the message says why."""


def figure(value: float, unit: str) -> dict[str, Any]:
    return {"value": round(value, 4), "unit": unit}


def batch_sizes(max_batch_size: int) -> list[int]:
    return sorted({size for size in BATCH_SIZES if size <= max_batch_size} | {1, max(max_batch_size, 1)})


def _torch_device(device: str) -> Any:
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise ProfileError(
            "no CUDA GPU is visible (torch.cuda.is_available() is false); run profile on the GPU the "
            "models will serve on, or pass --device cpu for a trial on this CPU"
        )
    return torch.device(device)


def _synchronize(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _gpu_memory_in_use(device: str) -> int | None:
    if device != "cuda":
        return None
    import torch

    free, total = torch.cuda.mem_get_info()
    return int(total - free)


def _onnx_runner(model_path: Path, device: str) -> Runner:
    import onnxruntime as ort

    from triton_mme.model_build import runtimes

    if device == "cuda" and "CUDAExecutionProvider" not in ort.get_available_providers():
        raise Skipped("no CUDA ONNX Runtime (onnxruntime-gpu is not installed)")
    session = runtimes.onnx_session(model_path, device=device)
    if device == "cuda" and session.get_providers()[0] != "CUDAExecutionProvider":
        raise Skipped("ONNX Runtime could not start its CUDA provider here")
    return lambda feeds: runtimes.run_onnx(session, feeds)


def _torchscript_runner(model_path: Path, device: str, contents: ArchiveContents) -> Runner:
    from triton_mme.model_build import runtimes

    module = runtimes.load_torchscript(model_path, device=device)
    inputs, outputs = [s.name for s in contents.inputs], [s.name for s in contents.outputs]
    return lambda feeds: runtimes.run_torchscript(module, feeds, inputs, outputs)


def _tensorrt_runner(model_path: Path, device: str) -> Runner:
    if device != "cuda":
        raise Skipped("a TensorRT plan runs only on a CUDA GPU")
    try:
        import tensorrt as trt
    except ImportError:
        raise Skipped("TensorRT is not installed here") from None
    import torch

    engine = trt.Runtime(trt.Logger(trt.Logger.ERROR)).deserialize_cuda_engine(model_path.read_bytes())
    if engine is None:
        raise ProfileError(f"{model_path}: TensorRT {trt.__version__} cannot load this plan on this GPU")
    context = engine.create_execution_context()
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    is_input = {name: engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT for name in names}

    def run(feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        kept = []
        for name in (n for n in names if is_input[n]):
            tensor = torch.from_numpy(np.ascontiguousarray(feeds[name])).cuda()
            context.set_input_shape(name, tuple(tensor.shape))
            context.set_tensor_address(name, tensor.data_ptr())
            kept.append(tensor)
        results = {}
        for name in (n for n in names if not is_input[n]):
            dtype = np.dtype(trt.nptype(engine.get_tensor_dtype(name)))
            shape = tuple(context.get_tensor_shape(name))
            results[name] = torch.from_numpy(np.empty(shape, dtype=dtype)).cuda()
            context.set_tensor_address(name, results[name].data_ptr())
        if not context.execute_async_v3(torch.cuda.current_stream().cuda_stream):
            raise ProfileError(f"{model_path}: TensorRT execution failed")
        return {name: tensor.cpu().numpy() for name, tensor in results.items()}

    return run


def _load(contents: ArchiveContents, model_path: Path, device: str) -> Runner:
    if contents.format is Format.ONNX:
        return _onnx_runner(model_path, device)
    if contents.format is Format.TORCHSCRIPT:
        return _torchscript_runner(model_path, device, contents)
    return _tensorrt_runner(model_path, device)


def _latencies(
    run: Runner, feeds: Mapping[str, np.ndarray], device: str, *, warmup: int, iterations: int
) -> list[float]:
    for _ in range(warmup):
        run(feeds)
    timings = []
    for _ in range(iterations):
        _synchronize(device)
        start = time.perf_counter()
        run(feeds)
        _synchronize(device)
        timings.append((time.perf_counter() - start) * 1000)
    return timings


def profile_archive(
    path: Path, record: ArchiveRecord, *, device: str, warmup: int = 5, iterations: int = 50
) -> dict[str, Any]:
    """Figures for one archive, or its `skipped` reason when its runtime is not available here."""
    contents = read_archive(path)
    result: dict[str, Any] = {
        "name": record.name,
        "format": record.format,
        "target_model": record.target_model,
        "max_batch_size": contents.config.max_batch_size,
        "input_datatypes": sorted({spec.datatype for spec in contents.inputs}),
    }
    gc.collect()
    memory_before = _gpu_memory_in_use(device)
    if device == "cuda":
        import torch

        torch.cuda.reset_peak_memory_stats()
    scratch = Path(tempfile.mkdtemp(prefix="profile-"))
    try:
        start = time.perf_counter()
        # What runs is what extract_archive checked in the same open file.
        extracted = extract_archive(path, scratch)
        contents = extracted.contents
        try:
            run = _load(contents, extracted.model_file, device)
            run(sample_inputs(contents.inputs, 1))
        except Skipped as reason:
            return {**result, "skipped": str(reason)}
        except ProfileError:
            raise
        except Exception as error:  # a model its runtime rejects: one line, no traceback
            raise ProfileError(
                f"{path.name}: does not load and run on {device}: {first_line(error)}"
            ) from None
        _synchronize(device)
        result["load_time"] = figure((time.perf_counter() - start) * 1000, "ms")
        memory_after = _gpu_memory_in_use(device)
        if memory_before is not None and memory_after is not None:
            import torch

            result["gpu_memory"] = figure((memory_after - memory_before) / 2**20, "MiB")
            result["torch_peak_allocated"] = figure(torch.cuda.max_memory_allocated() / 2**20, "MiB")
        result["batches"] = []
        for batch in batch_sizes(contents.config.max_batch_size):
            timings = _latencies(
                run, sample_inputs(contents.inputs, batch), device, warmup=warmup, iterations=iterations
            )
            mean = float(np.mean(timings))
            result["batches"].append(
                {
                    "batch_size": batch,
                    "iterations": iterations,
                    "latency_p50": figure(float(np.percentile(timings, 50)), "ms"),
                    "latency_p99": figure(float(np.percentile(timings, 99)), "ms"),
                    "throughput": figure(batch * 1000 / mean, "inferences/s"),
                }
            )
        del run
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        gc.collect()
        if device == "cuda":
            import torch

            torch.cuda.empty_cache()


def environment(device: str) -> dict[str, Any]:
    import onnxruntime
    import torch

    described: dict[str, Any] = {
        "device": device,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "onnxruntime": onnxruntime.__version__,
        "onnxruntime_providers": onnxruntime.get_available_providers(),
    }
    try:
        import tensorrt

        described["tensorrt"] = tensorrt.__version__
    except ImportError:
        described["tensorrt"] = None
    if device == "cuda":
        capability = torch.cuda.get_device_capability()
        described.update(
            gpu=torch.cuda.get_device_name(),
            compute_capability=f"sm_{capability[0]}{capability[1]}",
            gpu_memory=figure(torch.cuda.get_device_properties(0).total_memory / 2**20, "MiB"),
            cuda=torch.version.cuda,
            cudnn=torch.backends.cudnn.version(),
            driver=_driver_version(),
        )
    else:
        described["cpu"] = platform.processor() or platform.machine()
    return described


def _driver_version() -> str | None:
    try:
        found = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip().splitlines()[0] if found.stdout.strip() else None


def profile_build(
    directory: Path, *, device: str = "cuda", warmup: int = 5, iterations: int = 50
) -> dict[str, Any]:
    """Measure every archive named in `<directory>/manifest.json`."""
    _torch_device(device)
    manifest_path = directory / MANIFEST_FILE_NAME
    try:
        manifest = Manifest.read(manifest_path)
    except OSError as error:
        raise ProfileError(f"{manifest_path}: cannot read the build manifest ({error.strerror})") from None
    except ValueError as error:
        raise ProfileError(
            f"{manifest_path}: not a valid build manifest ({str(error).splitlines()[0]})"
        ) from None
    if not manifest.archives:
        raise ProfileError(f"{manifest_path}: names no archives; nothing to profile")
    archives = []
    for record in manifest.archives:
        path = directory / record.target_model
        if not path.is_file():
            raise ProfileError(f"{path}: archive named in the manifest is missing")
        archives.append(profile_archive(path, record, device=device, warmup=warmup, iterations=iterations))
    return {
        "schema_version": PERFORMANCE_SCHEMA_VERSION,
        "manifest_sha256": manifest.sha256,
        "environment": environment(device),
        "archives": archives,
    }

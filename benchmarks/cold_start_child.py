"""One cold start of a model archive in a fresh interpreter.

Usage: `python -m benchmarks.cold_start_child ARCHIVE [--device cpu|cuda]`. ONNX archives load in ONNX
Runtime with their config's settings (CUDA provider options too on cuda); TorchScript archives load
with torch.jit onto the device, as Triton's PyTorch backend does. Libraries are imported before the
clock starts (a Triton server has its backend loaded already). Prints one JSON line of seconds: unpack,
session (model load), warmup (the config's warm-up requests, which Triton runs during load),
first_inference, load_and_first (everything after unpacking) and total.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime  # noqa: F401  (imported before timing on purpose)
from tritonclient.grpc import model_config_pb2 as pb

from benchmarks.onnx_load import create_session, model_file, read_config, unpack, warmup_requests
from benchmarks.ort_options import cuda_provider_options, session_options
from triton_mme.archive_inspection.archive import read_archive
from triton_mme.core.formats import Format
from triton_mme.core.samples import sample_inputs
from triton_mme.core.triton_config import tensor_specs

Runner = Callable[[dict[str, np.ndarray]], object]


def _onnx_runner(path: Path, config: pb.ModelConfig, device: str) -> Runner:
    cuda = cuda_provider_options(config) if device == "cuda" else None
    session = create_session(path, session_options(config), cuda_options=cuda)
    if device == "cuda" and session.get_providers()[0] != "CUDAExecutionProvider":
        raise RuntimeError("ONNX Runtime has no CUDA provider here")
    return lambda feeds: session.run(None, feeds)


def _torchscript_runner(path: Path, config: pb.ModelConfig, device: str) -> Runner:
    import torch

    module = torch.jit.load(str(path), map_location=device).eval()
    names = [tensor.name for tensor in config.input]

    def run(feeds: dict[str, np.ndarray]) -> object:
        with torch.inference_mode():
            result = module(*(torch.from_numpy(feeds[name]).to(device) for name in names))
        if device == "cuda":
            torch.cuda.synchronize()
        return result

    return run


def cold_start(archive: Path, device: str = "cpu") -> dict[str, float]:
    if device == "cuda" or read_archive(archive).format is Format.TORCHSCRIPT:
        import torch

        if device == "cuda":
            torch.cuda.init()  # the CUDA context exists before Triton loads any model
    with tempfile.TemporaryDirectory(prefix="cold-start-") as scratch:
        start = time.perf_counter()
        model_dir = unpack(archive, Path(scratch))
        unpacked = time.perf_counter()
        config = read_config(model_dir)
        path = model_file(model_dir, config)
        load = _torchscript_runner if config.platform == "pytorch_libtorch" else _onnx_runner
        run = load(path, config, device)
        created = time.perf_counter()
        for feeds in warmup_requests(config):
            run(feeds)
        warmed = time.perf_counter()
        run(sample_inputs(tensor_specs(config.input), 1, seed=1))
        done = time.perf_counter()
    return {
        "unpack": unpacked - start,
        "session": created - unpacked,
        "warmup": warmed - created,
        "first_inference": done - warmed,
        "load_and_first": done - unpacked,
        "total": done - start,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_start_child")
    parser.add_argument("archive", type=Path)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args(argv)
    print(json.dumps(cold_start(args.archive, args.device)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

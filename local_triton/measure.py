"""Load time and latency of every archive of a build directory in the local CPU Triton."""

from __future__ import annotations

import statistics
import tarfile
import time
from pathlib import Path

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from local_triton.loader import SageMakerApi, list_archives
from local_triton.runner import LocalTriton
from local_triton.standin import CONFIG_FILE_NAME, NotRunnableOnCpu, rewrite_config
from model_build.invoke.payloads import decode_response, encode_binary_request
from model_build.manifest import TensorSpec
from model_build.samples import sample_inputs


def _config(archive: Path) -> mc.ModelConfig:
    with tarfile.open(archive, "r:gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(f"/{CONFIG_FILE_NAME}"))
        stream = tar.extractfile(member)
        assert stream is not None
        return text_format.Parse(stream.read().decode(), mc.ModelConfig())


def _inputs(config: mc.ModelConfig) -> tuple[TensorSpec, ...]:
    return tuple(
        TensorSpec(
            name=t.name, datatype=mc.DataType.Name(t.data_type).removeprefix("TYPE_"), dims=tuple(t.dims)
        )
        for t in config.input
    )


def measure(models_dir: Path, *, requests: int) -> int:
    """Print one Markdown row per archive: load time, first request, median and p90 latency at batch 1."""
    print("| TargetModel | load (s) | first request (ms) | median (ms) | p90 (ms) |")
    print("|---|---:|---:|---:|---:|")
    with LocalTriton(models_dir=models_dir, port=0, model_budget=1, report=lambda _line: None) as local:
        # Timed through the loopback front, as a client of the local endpoint sees it.
        front = SageMakerApi(local.endpoint.server_address[1])
        for target in list_archives(models_dir):
            config = _config(models_dir / target)
            try:
                rewrite_config(config, where=target)
            except NotRunnableOnCpu:
                print(f"| {target} | not runnable on CPU (TensorRT plan) | | | |")
                continue
            request = encode_binary_request(sample_inputs(_inputs(config), 1))
            started = time.perf_counter()
            local.cache.ensure_loaded(target)
            load_s = time.perf_counter() - started
            timings = []
            for _ in range(requests + 1):
                started = time.perf_counter()
                reply = front.invoke(target, request.body, request.content_type)
                timings.append((time.perf_counter() - started) * 1000)
                if reply.status != 200:
                    print(f"| {target} | {load_s:.1f} | HTTP {reply.status}: {reply.error_message()} | | |")
                    break
                decode_response(reply.content_type, reply.body)
            else:
                first, rest = timings[0], sorted(timings[1:])
                p90 = rest[min(len(rest) - 1, int(0.9 * len(rest)))]
                print(
                    f"| {target} | {load_s:.1f} | {first:.1f} | {statistics.median(rest):.1f} | {p90:.1f} |"
                )
    return 0

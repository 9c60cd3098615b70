"""Load time and latency of every archive of a build directory in the local CPU Triton."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from triton_mme.archive_inspection import inspect_archive
from triton_mme.client.payloads import decode_response, encode_binary_request
from triton_mme.client.triton_routes import SageMakerRoutes
from triton_mme.core.samples import sample_inputs
from triton_mme.local_triton.loader import list_archives
from triton_mme.local_triton.runner import LocalTriton
from triton_mme.local_triton.standin import NotRunnableOnCpu, rewrite_config


def measure(models_dir: Path, *, requests: int) -> int:
    """Print one Markdown row per archive: load time, first request, median and p90 latency at batch 1."""
    print("| TargetModel | load (s) | first request (ms) | median (ms) | p90 (ms) |")
    print("|---|---:|---:|---:|---:|")
    with LocalTriton(models_dir=models_dir, port=0, model_budget=1, report=lambda _line: None) as local:
        # Timed through the loopback front, as a client of the local endpoint sees it.
        front = SageMakerRoutes.at_port(local.endpoint.server_address[1])
        for target in list_archives(models_dir):
            # The config only: the load below runs the whole check on what it unpacks.
            contents = inspect_archive(models_dir / target, packed=True)
            config = contents.config
            try:
                rewrite_config(config, where=target)
            except NotRunnableOnCpu:
                print(f"| {target} | not runnable on CPU (TensorRT plan) | | | |")
                continue
            request = encode_binary_request(sample_inputs(contents.inputs, 1))
            started = time.perf_counter()
            local.cache.ensure_loaded(target)
            load_s = time.perf_counter() - started
            timings = []
            for _ in range(requests + 1):
                started = time.perf_counter()
                reply = front.invoke(target, request.body, request.content_type)
                timings.append((time.perf_counter() - started) * 1000)
                if reply.status != 200:
                    print(f"| {target} | {load_s:.1f} | HTTP {reply.status}: {reply.error_line()} | | |")
                    break
                decode_response(reply.content_type, reply.body)
            else:
                first, rest = timings[0], sorted(timings[1:])
                p90 = rest[min(len(rest) - 1, int(0.9 * len(rest)))]
                print(
                    f"| {target} | {load_s:.1f} | {first:.1f} | {statistics.median(rest):.1f} | {p90:.1f} |"
                )
    return 0

"""The benchmarks in the order of the issue, and how one is run into a Section."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks import (
    build,
    client_invoke,
    cold_start,
    gpu,
    growth,
    hit_rate_validation,
    load_generator,
    log_parser,
    payloads,
    placement,
    plan_speed,
    resnet_steady,
    serving_check,
    synthesis,
    text_model,
)
from benchmarks.context import RunContext
from benchmarks.results import Section


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str
    run: Callable[[RunContext, Section], None]
    # Returns why the benchmark cannot run here (e.g. "not run: no GPU"), or None.
    unavailable: Callable[[], str | None] = lambda: None


BENCHMARKS = (
    Benchmark(cold_start.NAME, cold_start.TITLE, cold_start.run),
    Benchmark(resnet_steady.NAME, resnet_steady.TITLE, resnet_steady.run),
    Benchmark(text_model.NAME, text_model.TITLE, text_model.run),
    Benchmark(payloads.NAME, payloads.TITLE, payloads.run),
    Benchmark(synthesis.NAME, synthesis.TITLE, synthesis.run),
    Benchmark(build.NAME, build.TITLE, build.run),
    Benchmark(gpu.NAME, gpu.TITLE, gpu.run, gpu.unavailable),
    Benchmark(client_invoke.NAME, client_invoke.TITLE, client_invoke.run),
    Benchmark(serving_check.NAME, serving_check.TITLE, serving_check.run),
    Benchmark(
        serving_check.GPU_NAME, serving_check.GPU_TITLE, serving_check.run_gpu, serving_check.gpu_unavailable
    ),
    Benchmark(plan_speed.NAME, plan_speed.TITLE, plan_speed.run),
    Benchmark(load_generator.NAME, load_generator.TITLE, load_generator.run),
    Benchmark(
        hit_rate_validation.NAME,
        hit_rate_validation.TITLE,
        hit_rate_validation.run,
        hit_rate_validation.unavailable,
    ),
    Benchmark(log_parser.NAME, log_parser.TITLE, log_parser.run),
    Benchmark(growth.NAME, growth.TITLE, growth.run),
    Benchmark(placement.NAME, placement.TITLE, placement.run),
)


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def run_benchmark(benchmark: Benchmark, ctx: RunContext) -> Section:
    """Run one benchmark; a failure is recorded in its section (with the reason) instead of ending the run."""
    section = Section(name=benchmark.name, title=benchmark.title)
    reason = benchmark.unavailable()
    if reason:
        section.status = reason
        return section
    try:
        benchmark.run(ctx, section)
    except Exception as error:
        traceback.print_exc()
        section.status = f"failed: {_one_line(error)}"
    return section

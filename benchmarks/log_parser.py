"""14. Triton log parser: lines per second on a synthetic day of an endpoint that loads 100 models a second.

The lines are the ones Triton 2.51 writes at the endpoint's log level for a model's load and eviction (the
shapes of tests/observability/fixtures/), 1,000 TargetModels in turn, 100 loads and 100 evictions a second:
9 lines per load and eviction, 900 lines a second, 77.8 million for the whole day. They are generated a
minute at a time and only the parse is timed: `read_events` and `summarize`, the path of `triton-mme models
--local` and of the endpoint's log reader. The full run parses `HOURS` hours of that day (3.2 million lines
an hour); the figure is a rate, and parsing the whole day takes the same rate 24 times as long.
"""

from __future__ import annotations

import time

from benchmarks.context import RunContext
from benchmarks.results import Section
from triton_mme.observability.figures import summarize
from triton_mme.observability.triton_log import read_events

NAME = "log_parser"
TITLE = "14. Triton log parser: lines per second at 100 loads/s"
LOADS_PER_S = 100
MODELS = 1000
HOURS = 1
LOAD_LINES = (
    '"Loading SageMaker TargetModel: {m}"',
    '"Model repository registered: /opt/ml/models/{h}/model"',
    '"loading: {m}:1"',
    '"TRITONBACKEND_ModelInstanceInitialize: {m}_0_0 (GPU device 0)"',
    "\"successfully loaded '{m}'\"",
)
EVICT_LINES = (
    '"Unloading SageMaker TargetModel: {m}\\n"',
    "\"successfully unloaded '{m}' version 1\"",
    '"UNLOAD for model {m} completed in 1 seconds."',
    '"Model repository unregistered: /opt/ml/models/{h}/model"',
)
# The source file and line of each of those lines, in the same order.
SOURCES: tuple[str, ...] = (
    "sagemaker_server.cc:360",
    "model_repository_manager.cc:1717",
    "model_lifecycle.cc:472",
    "onnxruntime.cc:2830",
    "model_lifecycle.cc:839",
    "sagemaker_server.cc:708",
    "model_lifecycle.cc:624",
    "sagemaker_server.cc:763",
    "model_repository_manager.cc:1749",
)


def minute_of_lines(minute: int) -> list[str]:
    """One minute of the synthetic day: each second, 100 loads and the evictions that make room for them."""
    names = [f"model-{i:04d}-0123456789abcdef.tar.gz" for i in range(MODELS)]
    templates = list(zip(SOURCES, LOAD_LINES + EVICT_LINES, strict=True))
    lines = []
    for second in range(60):
        at = minute * 60 + second
        clock = f"I1201 {at // 3600 % 24:02d}:{at // 60 % 60:02d}:{at % 60:02d}"
        for n in range(LOADS_PER_S):
            loaded = names[(at * LOADS_PER_S + n) % MODELS]
            evicted = names[(at * LOADS_PER_S + n + MODELS // 2) % MODELS]
            micros = f".{n * 9999 % 1000000:06d} 1"
            for i, (source, text) in enumerate(templates):
                model = loaded if i < len(LOAD_LINES) else evicted
                lines.append(f"{clock}{micros} {source}] {text.format(m=model, h=model[6:10])}")
    return lines


def run(ctx: RunContext, section: Section) -> None:
    minutes = ctx.pick(HOURS * 60, 5)
    parsed, seconds, loads, evictions = 0, 0.0, 0.0, 0.0
    for minute in range(minutes):
        lines = minute_of_lines(minute)
        started = time.perf_counter()
        summary = summarize(read_events(lines))
        seconds += time.perf_counter() - started
        parsed += len(lines)
        loads += sum(f.cold_loads for f in summary.models.values())
        evictions += sum(f.evictions for f in summary.models.values())
    expected = minutes * 60 * LOADS_PER_S
    if loads != expected or evictions != expected:
        raise RuntimeError(
            f"the parser counted {loads:.0f} loads, {evictions:.0f} evictions; {expected} happened"
        )
    section.add("lines", "lines parsed", parsed, "lines")
    section.add("rate", "parse rate (read_events + summarize)", parsed / seconds, "lines/s")
    section.add("day", "a whole day at that rate", 86400 * 900 / (parsed / seconds), "s")
    section.target("Parser throughput", "rate", ">=", 50_000.0)
    section.settings["Synthetic endpoint"] = (
        f"{LOADS_PER_S} loads/s and as many evictions, {MODELS:,} TargetModels, 9 lines per load and eviction"
    )
    section.notes.append(
        f"{minutes} minutes of the synthetic day, generated a minute at a time; only the parse is timed. "
        "Every load and eviction must be counted, or the benchmark fails."
    )

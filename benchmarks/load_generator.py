"""12. The load generator's own ceiling: `triton-mme loadtest` against a loopback stub that answers at once.

The stub runs in its own process (benchmarks/loadgen_stub.py) and the load test in another, as a user runs
it, so the figure is what Locust and the project's request path sustain on this machine: well above what one
endpoint instance takes, so the generator is never what a load test measures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from benchmarks.capacity_inputs import synthetic_manifest, write_manifest, write_traffic
from benchmarks.context import REPO_ROOT, RunContext
from benchmarks.results import Section

NAME = "loadgen"
TITLE = "12. Load generator: requests per second against a loopback stub"
MODELS = 100
USERS = (4, 16)


@contextmanager
def stub_endpoint() -> Iterator[str]:
    stub = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.loadgen_stub"],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stub.stdout is not None
        yield stub.stdout.readline().strip()
    finally:
        if stub.stdin is not None:
            stub.stdin.close()
        stub.wait(timeout=30)


def run(ctx: RunContext, section: Section) -> None:
    folder = ctx.scratch / "loadgen"
    manifest = write_manifest(folder, synthetic_manifest(MODELS))
    traffic = write_traffic(folder / "traffic.yaml", {"zipf": {"total_rate_per_s": 100, "exponent": 1.0}})
    duration, repetitions = ctx.pick(10, 3), ctx.pick(3, 1)
    with stub_endpoint() as url:
        for users in USERS:
            rates, p50s = [], []
            for attempt in range(repetitions):
                out = folder / f"loadtest-{users}-{attempt}.json"
                command = [
                    sys.executable, "-m", "triton_mme", "loadtest", "--traffic", str(traffic),
                    "--manifest", str(manifest), "--local", url, "--rate", "0", "--users", str(users),
                    "--warmup", "1", "--duration", str(duration), "--out", str(out),
                ]  # fmt: skip
                subprocess.run(command, cwd=REPO_ROOT, check=True, capture_output=True, timeout=300)
                measured = json.loads(out.read_text())["measured"]
                if measured["errors"]["other"] or measured["errors"]["timeouts"]:
                    raise RuntimeError(f"the stub failed requests: {measured['errors']}")
                rates.append(measured["request_rate_per_s"])
                p50s.append(measured["latency_ms"]["p50_ms"])
            section.add_median(
                f"rate.{users}", f"{users} users, back to back: requests per second", rates, "req/s"
            )
            section.add_median(f"p50.{users}", f"{users} users: median request latency", p50s, "ms")
    best = max(USERS, key=lambda users: section.figure(f"rate.{users}").value)
    section.add(
        "rate",
        "Sustained requests per second (best of the user counts)",
        section.figure(f"rate.{best}").value,
        "req/s",
    )
    section.target("Load generator sustains", "rate", ">=", 300.0)
    section.chart = [f"rate.{users}" for users in USERS]
    section.settings["Stub"] = "loopback HTTP/1.1, keep-alive, answers at once (benchmarks/loadgen_stub.py)"
    section.settings["Traffic"] = f"Zipf 1.0 over {MODELS} archives, binary batch-1 bodies of 768 bytes"
    section.notes.append(
        f"Median of {repetitions} runs of {duration} s measured after a 1 s warm-up, per user count; the "
        "stub and the load test each in their own process on this machine's cores."
    )

"""What a comparison must say about its measurement before a reader trusts the numbers side by side: a load
test against the local CPU stand-in measures CPU times, not the GPU service time the prediction assumes; a
handful of cold loads is not a rate per hour; a few hundred requests give a wide hit-rate error."""

from __future__ import annotations

import math

from triton_mme.core.wording import plural
from triton_mme.planner.outcome import Outcome

# Fewer counted events than this are reported as a count, not extrapolated into a rate.
MIN_EVENTS_FOR_A_RATE = 20
# Below this many measured requests the hit rate's standard error is stated.
MIN_REQUESTS_FOR_A_RATE = 1000
CPU_STAND_IN = "CPU stand-in"


def measured_cold_loads(measured: Outcome) -> float | None:
    """The cold loads the load test counted (its rate per hour times the hours it measured)."""
    if measured.cold_loads_per_hour is None:
        return None
    return measured.cold_loads_per_hour * measured.duration_s / 3600


def on_cpu_stand_in(measured: Outcome) -> bool:
    return measured.configuration.target == "local"


def cold_loads_cell(measured: Outcome) -> str:
    """`1,814` for a rate from enough events; `3 loads in 64 s (too few for a rate)` otherwise."""
    counted = measured_cold_loads(measured)
    if counted is None or measured.cold_loads_per_hour is None:
        return "—"
    if round(counted) < MIN_EVENTS_FOR_A_RATE:
        return f"{plural(round(counted), 'load')} in {measured.duration_s:,.0f} s (too few for a rate)"
    return f"{measured.cold_loads_per_hour:,.0f}"


def latency_cell(text: str, measured: Outcome) -> str:
    return f"{text} ({CPU_STAND_IN})" if on_cpu_stand_in(measured) and text != "—" else text


def caveats(predicted: Outcome, measured: Outcome) -> list[str]:
    """One line per reason the two columns are not alike."""
    lines = []
    if on_cpu_stand_in(measured):
        lines.append(
            f"note: measured on the local Triton's {CPU_STAND_IN}: its latencies are CPU times, not the GPU "
            "service time the prediction assumes (the traffic file's service_ms); compare hit rates and cold "
            "loads, not latencies"
        )
    counted = measured_cold_loads(measured)
    if counted is not None and round(counted) < MIN_EVENTS_FOR_A_RATE:
        lines.append(
            f"note: {plural(round(counted), 'cold load')} measured: fewer than {MIN_EVENTS_FOR_A_RATE}, so "
            "no rate per hour is given; run the load test longer (--duration)"
        )
    rate = measured.cache_hit_rate
    if rate is not None and 0 < measured.requests < MIN_REQUESTS_FOR_A_RATE:
        error = 100 * math.sqrt(max(rate * (1 - rate), 1e-12) / measured.requests)
        lines.append(
            f"note: {plural(round(measured.requests), 'request')} measured: the measured hit rate's standard "
            f"error is about {error:.1f} points"
        )
    return lines

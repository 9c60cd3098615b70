"""A load test's measurement as text: the whole run, then the most requested models."""

from __future__ import annotations

from triton_mme.planner.outcome import LoadTestReport


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def render_summary(report: LoadTestReport, *, limit: int = 10) -> str:
    m = report.measured
    e = m.errors
    lines = [
        f"{m.configuration.describe()}: {m.requests:,.0f} requests in {m.duration_s:,.1f} s "
        f"({m.request_rate_per_s:,.1f}/s, {report.users} users) after {report.warmup_requests:,} warm-up "
        "requests",
        f"cache-hit rate {_percent(m.cache_hit_rate)}"
        + (
            f" (server: {_percent(report.server.cache_hit_rate)}, {report.server.source})"
            if report.server
            else ""
        )
        + f"; latency p50 {_ms(m.latency_ms.p50_ms)} ms, p99 {_ms(m.latency_ms.p99_ms)} ms",
        f"errors: 507 {e.http_507}, 4xx {e.http_4xx}, 5xx {e.http_5xx}, timeouts {e.timeouts}, "
        f"ModelNotReady {e.model_not_ready}, other {e.other}",
    ]
    for model in sorted(m.models, key=lambda x: -x.requests)[:limit]:
        lines.append(
            f"  {model.model}: {model.requests:,.0f} requests, hit {_percent(model.cache_hit_rate)}, "
            f"p50 {_ms(model.latency_ms.p50_ms)} ms, p99 {_ms(model.latency_ms.p99_ms)} ms"
        )
    return "\n".join(lines) + "\n"

"""A plan as a table (stdout) and as a chart; a prediction beside a load test's measurement (the JSON
documents are plan_document.py)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

from triton_mme.core.wording import plural
from triton_mme.planner.caveats import CPU_STAND_IN, caveats, cold_loads_cell, latency_cell, on_cpu_stand_in
from triton_mme.planner.outcome import Outcome
from triton_mme.planner.plan import CandidatePlan, Plan


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _percent(value: float | None, digits: int = 1) -> str:
    return "—" if value is None or math.isnan(value) else f"{100 * value:.{digits}f} %"


def _ms(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "—"
    return "inf" if math.isinf(value) else f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _rows_to_text(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        return "  ".join(cells).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(row) for row in rows)]


def _set_by(plan: CandidatePlan) -> str:
    """What decided the instance count, in a word or two: the target one instance fewer misses."""
    if not plan.feasible:
        return "misses: " + (plan.problem or "; ".join(plan.evaluation.misses if plan.evaluation else ()))
    text = plan.sized_by or ""
    short = [name for prefix, name in _SHORT.items() if prefix in text]
    return ", ".join(short) or text


_SHORT = {"cache-hit rate": "hit rate", "p99": "p99", "GPU utilization": "GPU time", "GPU time": "GPU time",
          "minimum": "minimum"}  # fmt: skip


def candidate_row(plan: CandidatePlan) -> list[str]:
    evaluation, price = plan.evaluation, plan.candidate.price
    fits = "/".join(f"{plan.capacity_models[n]:,}" if n in plan.capacity_models else "∞" for n in _LIMITS)
    return [
        plan.candidate.name,
        "—" if price is None else f"{price.usd_per_hour:.3f}",
        fits,
        plan.binding_limit,
        "—" if evaluation is None else f"{evaluation.stats.resident_per_instance:.1f}",
        _percent(evaluation.stats.hit_rate if evaluation else None),
        "—" if evaluation is None else f"{evaluation.cold_loads_per_hour:,.0f}",
        _ms(1000 * evaluation.p99_s if evaluation else None),
        "—" if evaluation is None else f"{evaluation.instances:,}",
        _money(plan.monthly_usd),
        f"{plan.single.instances:,}" if plan.single.problem is None else "—",
        _money(plan.single.monthly_usd) if plan.single.problem is None else plan.single.problem,
        _set_by(plan),
    ]


_LIMITS = ("GPU memory", "host memory", "disk")
NUMERIC_COLUMNS = {1, 4, 5, 6, 7, 8, 9, 10, 11}


HEADER = [
    "instance type", "$/hour", "fit GPU/host/disk", "binds", "resident", "hit rate", "cold loads/h",
    "p99 ms", "instances", "$/month", "1-per-model inst.", "1-per-model $/month", "count set by",
]  # fmt: skip


def render_plan(plan: Plan) -> str:
    """The plan as text: what was assumed, one row per instance type, the recommendation."""
    served, options = plan.served, plan.options
    workload = served.workload
    measured = sum(1 for e in served.estimates if e.gpu_source != "estimate")
    targets = [f"GPU utilization <= {options.gpu_utilization_target:g} %"]
    if options.min_cache_hit_rate is not None:
        targets.append(f"cache-hit rate >= {_percent(options.min_cache_hit_rate)}")
    if options.p99_latency_ms is not None:
        targets.append(f"p99 <= {options.p99_latency_ms:,.0f} ms (cold starts included)")
    stderr = [c.evaluation.stats.hit_rate_stderr for c in plan.candidates if c.evaluation is not None]
    lines = [
        f"Traffic: {plural(len(workload.records), 'archive')}, {workload.total_rate_per_s:,.2f} requests/s "
        f"({workload.total_rate_per_s * workload.duration_s:,.0f} in {workload.duration_s:,.0f} s), "
        f"GPU time {served.total_gpu_seconds_per_s:.3f} s per second.",
        f"Targets: {'; '.join(targets)}.",
        f"Footprints: {measured} from the serving report, {len(served.estimates) - measured} estimated "
        "(docs/capacity-planning.md); prices: " + _price_sources(plan) + ".",
        f"Simulated {options.simulated_requests:,} requests per configuration after a warm-up, seed "
        f"{workload.seed}; hit-rate standard error <= {100 * max(stderr, default=0):.2f} points.",
        "",
        *_rows_to_text(HEADER, [candidate_row(c) for c in plan.candidates], right=NUMERIC_COLUMNS),
    ]
    for name, reason in plan.skipped:
        lines.append(f"Not a candidate: {name}: {reason}.")
    for candidate in plan.candidates:
        if candidate.evaluation is not None and candidate.evaluation.slow_cold_starts:
            slow = candidate.evaluation.slow_cold_starts
            lines.append(
                f"{candidate.candidate.name}: the cold start of {', '.join(slow[:3])}"
                f"{' and others' if len(slow) > 3 else ''} exceeds InvokeEndpoint's 60 s: those requests get "
                "ModelNotReadyException and must be retried."
            )
    lines += ["", f"Recommendation: {plan.recommendation()}."]
    return "\n".join(lines) + "\n"


def _price_sources(plan: Plan) -> str:
    sources = sorted({c.candidate.price.source for c in plan.candidates if c.candidate.price is not None})
    unknown = [c.candidate.name for c in plan.candidates if c.candidate.price is None]
    text = f"{plan.region}: " + ("; ".join(sources) or "none known")
    return text + (f"; unknown for {', '.join(unknown)}" if unknown else "")


def _usd(value: float, _position: object = None) -> str:
    """$12k, $1.1M: cost ticks a reader takes in at a glance."""
    if value >= 1e6:
        return f"${value / 1e6:g}M"
    return f"${value / 1e3:g}k" if value >= 1e3 else f"${value:g}"


def _hit_axis_start(hits: list[float], target: float | None) -> float:
    """Where the hit-rate axis starts: below the lowest bar and the target by a third of the span shown,
    so the target line sits inside the panel, never on its edge."""
    lowest = min([*hits, *([target] if target is not None else [])], default=90.0)
    span = max(100 - lowest, 1.0)
    return max(lowest - span / 2, 0.0)


def render_chart(plan: Plan, path: Path) -> None:
    """Monthly cost (multi-model endpoint and one endpoint per model; instances for a local Triton) and
    predicted hit rate per type, the recommended type marked, the targets drawn, and in the picture why
    nothing is recommended when nothing is. matplotlib's warnings stay off the terminal."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _render_chart(plan, path)


def _render_chart(plan: Plan, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    sized = [c for c in plan.candidates if c.evaluation is not None]
    names = [c.candidate.name for c in sized]
    local = bool(plan.candidates)
    local = local and all(c.candidate.configuration.target == "local" for c in plan.candidates)
    # A local Triton has no price: the budget that meets the targets is the recommendation.
    best = plan.cheapest() or (next((c for c in sized if c.feasible), None) if local else None)
    if not sized:
        _message_chart(path, "Nothing to draw", plan.recommendation())
        return
    figure, (cost_axis, hit_axis) = plt.subplots(
        1, 2, figsize=(12, 0.45 * len(names) + 2.6), sharey=True, gridspec_kw={"width_ratios": [3, 2]}
    )
    positions = list(range(len(names)))
    mme = [c.monthly_usd or 0 for c in sized]
    single = [c.single.monthly_usd or 0 for c in sized]
    priced = not local and any(value > 0 for value in mme + single)
    if priced:
        cost_axis.barh(
            [p - 0.2 for p in positions], mme, height=0.4, label="multi-model endpoint", color="#4C72B0"
        )
        cost_axis.barh(
            [p + 0.2 for p in positions], single, height=0.4, label="one endpoint per model", color="#C44E52"
        )
        cost_axis.set_xscale("log")
        cost_axis.xaxis.set_major_formatter(FuncFormatter(_usd))
        cost_axis.xaxis.set_minor_formatter(FuncFormatter(lambda *_: ""))
        cost_axis.set_xlabel(f"USD per month, log scale ({plan.region})", fontsize=8)
        cost_axis.set_title("Cost at the instances each needs", fontsize=10, loc="left")
    else:
        # A local Triton (or types without a price): what it needs is instances, not dollars.
        counts = [c.evaluation.instances if c.evaluation else 0 for c in sized]
        cost_axis.barh(positions, counts, height=0.5, label="instances needed", color="#4C72B0")
        cost_axis.set_xlim(0, max(counts, default=1) * 1.3 + 0.5)
        cost_axis.set_xlabel("instances" + (" (local Triton: no price)" if local else " (no known price)"),
                             fontsize=8)  # fmt: skip
        cost_axis.set_title("Instances each needs", fontsize=10, loc="left")
    cost_axis.set_yticks(positions, names, fontsize=8)
    cost_axis.invert_yaxis()
    for position, c in zip(positions, sized, strict=True):
        assert c.evaluation is not None
        label = f"x{c.evaluation.instances}" + ("" if c.feasible else " misses targets")
        at = max(c.monthly_usd or 1, 1) if priced else c.evaluation.instances
        cost_axis.annotate(label, (at, position - (0.2 if priced else 0)), fontsize=7, va="center",
                           xytext=(3, 0), textcoords="offset points")  # fmt: skip
    hits = [100 * c.evaluation.stats.hit_rate for c in sized if c.evaluation is not None]
    target = None if plan.options.min_cache_hit_rate is None else 100 * plan.options.min_cache_hit_rate
    start = _hit_axis_start(hits, target)
    colors = ["#55A868" if c.feasible else "#AAAAAA" for c in sized]
    hit_axis.hlines(positions, start, hits, color=colors, linewidth=2)
    hit_axis.scatter(hits, positions, color=colors, zorder=3, s=30)
    for position, hit in zip(positions, hits, strict=True):
        hit_axis.annotate(f"{hit:.1f} %", (hit, position), fontsize=7, va="center", ha="right",
                          xytext=(-6, 7), textcoords="offset points")  # fmt: skip
    hit_axis.set_xlim(start, 100.5)
    if target is not None:
        hit_axis.axvline(target, color="black", linestyle="--", linewidth=1)
        hit_axis.annotate(
            f"target {target:g} %",
            (target, 1.0),
            xycoords=("data", "axes fraction"),
            fontsize=7,
            ha="left",
            va="bottom",
            xytext=(3, 2),
            textcoords="offset points",
        )
    hit_axis.set_xlabel("predicted cache-hit rate, % (grey: misses a target)", fontsize=8)
    hit_axis.set_title("Requests that find their model loaded", fontsize=10, loc="left", pad=14)
    if best is not None:
        marked = names.index(best.candidate.name)
        starred = [f"★ {name}" if index == marked else name for index, name in enumerate(names)]
        cost_axis.set_yticks(positions, starred, fontsize=8)
        cost_axis.get_yticklabels()[marked].set_fontweight("bold")
        for axis in (cost_axis, hit_axis):
            axis.axhspan(marked - 0.5, marked + 0.5, color="#F2C14E", alpha=0.25, zorder=0)
    for axis in (cost_axis, hit_axis):
        axis.tick_params(labelsize=8)
    handles, labels = cost_axis.get_legend_handles_labels()
    if best is not None and best.evaluation is not None:
        from matplotlib.patches import Patch

        handles.append(Patch(color="#F2C14E", alpha=0.4))
        labels.append(f"★ recommended: {best.candidate.name} x {best.evaluation.instances}")
    figure.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    top = 1.0
    if best is None:
        figure.text(0.01, 0.995, "\n".join(textwrap.wrap(plan.recommendation(), 150)[:3]), fontsize=8,
                    va="top", ha="left", color="#C44E52")  # fmt: skip
        top = 0.9
    figure.tight_layout(rect=(0, 0.06, 1, top))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _message_chart(path: Path, title: str, message: str) -> None:
    """A picture that says why there is no chart, where a chart was asked for."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(10, 2.4))
    figure.text(0.02, 0.85, title, fontsize=12, weight="bold", va="top")
    figure.text(0.02, 0.62, "\n".join(textwrap.wrap(message, 120)[:6]), fontsize=9, va="top")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def render_comparison_chart(predicted: Outcome, measured: Outcome, path: Path, *, limit: int = 20) -> None:
    """Predicted against measured cache-hit rate, overall and for the most requested models."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted(measured.models, key=lambda m: -m.requests)[:limit]
    rows = [("all models", predicted.cache_hit_rate, measured.cache_hit_rate)]
    for model in models:
        guess = predicted.model(model.target_model)
        rows.append((model.model, guess.cache_hit_rate if guess else None, model.cache_hit_rate))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        figure, axis = plt.subplots(figsize=(10, 0.35 * len(rows) + 1.8))
        positions = list(range(len(rows)))
        shown = [100 * (p or 0) for _, p, _ in rows], [100 * (m or 0) for _, _, m in rows]
        axis.barh([p - 0.2 for p in positions], shown[0], height=0.4, label="predicted", color="#4C72B0")
        axis.barh([p + 0.2 for p in positions], shown[1], height=0.4, label="measured", color="#DD8452")
        axis.set_yticks(positions, [name for name, _, _ in rows], fontsize=8)
        axis.invert_yaxis()
        axis.set_xlim(0, 100)
        axis.set_xlabel("cache-hit rate, %", fontsize=8)
        title = f"Predicted and measured: {measured.configuration.describe()}"
        axis.set_title(title, fontsize=10, loc="left")
        axis.legend(fontsize=8, loc="lower right")
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=100)
        plt.close(figure)


def render_comparison(predicted: Outcome, measured: Outcome, *, limit: int = 20) -> str:
    """Predicted and measured side by side: overall, then the most requested models."""
    overall = [
        ["cache-hit rate", _percent(predicted.cache_hit_rate), _percent(measured.cache_hit_rate),
         _difference(predicted.cache_hit_rate, measured.cache_hit_rate)],
        ["cold loads per hour", _count(predicted.cold_loads_per_hour), cold_loads_cell(measured), ""],
        ["latency p50 ms", _ms(predicted.latency_ms.p50_ms),
         latency_cell(_ms(measured.latency_ms.p50_ms), measured), ""],
        ["latency p99 ms", _ms(predicted.latency_ms.p99_ms),
         latency_cell(_ms(measured.latency_ms.p99_ms), measured), ""],
        ["requests/s", f"{predicted.request_rate_per_s:,.1f}", f"{measured.request_rate_per_s:,.1f}", ""],
        ["errors (507/4xx/5xx/timeouts/not ready/other)", "—", _errors(measured)],
    ]  # fmt: skip
    overall[-1].append("")
    lines = [
        f"Configuration: {measured.configuration.describe()}; measured {measured.requests:,.0f} requests "
        f"over {measured.duration_s:,.0f} s; predicted at the measured rate.",
        "",
        *_rows_to_text(["", "predicted", "measured", "difference"], overall, right={1, 2, 3}),
        "",
    ]
    rows = []
    by_requests = sorted(measured.models, key=lambda m: -m.requests)[:limit]
    for model in by_requests:
        guess = predicted.model(model.target_model)
        rows.append(
            [
                model.model,
                f"{model.requests:,.0f}",
                _percent(guess.cache_hit_rate if guess else None),
                _percent(model.cache_hit_rate),
                _ms(guess.latency_ms.p99_ms if guess else None),
                _ms(model.latency_ms.p99_ms),
            ]
        )
    header = ["model", "requests", "hit predicted", "hit measured", "p99 ms predicted", "p99 ms measured"]
    if on_cpu_stand_in(measured):
        header[-1] += f" ({CPU_STAND_IN})"
    lines += _rows_to_text(header, rows, right={1, 2, 3, 4, 5})
    notes = caveats(predicted, measured)
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def _difference(predicted: float | None, measured: float | None) -> str:
    if predicted is None or measured is None:
        return "—"
    return f"{100 * (predicted - measured):+.1f} points"


def _count(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _errors(outcome: Outcome) -> str:
    e = outcome.errors
    return f"{e.http_507}/{e.http_4xx}/{e.http_5xx}/{e.timeouts}/{e.model_not_ready}/{e.other}"

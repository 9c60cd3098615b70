"""Write a run as `<date>-<machine>.json`, a Markdown table `.md` and a bar chart `.png`."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Any

from benchmarks.machine import machine_slug
from benchmarks.results import RAN, Figure, Report, Section


def result_stem(report: Report) -> str:
    return f"{report.date}-{machine_slug(report.machine)}"


def write_report(report: Report, out_dir: Path) -> list[Path]:
    """The JSON, Markdown and PNG files of one run, written side by side in out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / result_stem(report)
    paths = [stem.with_suffix(".json"), stem.with_suffix(".md"), stem.with_suffix(".png")]
    paths[0].write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(render_markdown(report, chart_name=paths[2].name), encoding="utf-8")
    render_chart(report, paths[2])
    return paths


def _number(value: float | None) -> str:
    if value is None:
        return ""
    if math.isinf(value) or math.isnan(value):
        return str(value)
    magnitude = abs(value)
    if value.is_integer() and magnitude < 1e6:
        return f"{value:,.0f}"
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:#.3g}"


def _figure_row(figure: Figure) -> str:
    spread = ""
    if figure.statistic == "p50":
        spread = f"p99 {_number(figure.p99)}, mean {_number(figure.mean)}"
    elif figure.statistic == "median" and figure.count > 1:
        spread = f"min {_number(figure.minimum)}, max {_number(figure.maximum)}"
    statistic = "" if figure.statistic == "value" else f"{figure.statistic}, n={figure.count}"
    return f"| {figure.label} | {_number(figure.value)} {figure.unit} | {statistic} | {spread} |"


def _section_markdown(section: Section) -> list[str]:
    lines = [f"### {section.title}", ""]
    if section.status != RAN:
        return [*lines, f"_{section.status}_", ""]
    if section.settings:
        shown = "; ".join(f"{key}: {value}" for key, value in section.settings.items())
        lines += [f"Settings — {shown}", ""]
    if section.figures:
        lines += ["| Measured | Value | Statistic | Spread |", "|---|---:|---|---|"]
        lines += [_figure_row(figure) for figure in section.figures]
        lines.append("")
    if section.ratios:
        lines += ["| Ratio (same run) | Value |", "|---|---:|"]
        lines += [f"| {ratio.label} | {_number(ratio.value)}x |" for ratio in section.ratios]
        lines.append("")
    lines += [f"- {note}" for note in section.notes]
    if section.notes:
        lines.append("")
    return lines


def _targets_markdown(report: Report) -> list[str]:
    rows = []
    for section in report.sections:
        if section.status != RAN:
            rows.append(f"| {section.title} | — | {section.status} | not run |")
        for target in section.targets:
            unit = "x" if target.unit == "x" else f" {target.unit}"
            wanted = f"{target.comparison} {_number(target.threshold)}{unit}"
            result = "**pass**" if target.passed else "**miss**"
            rows.append(f"| {target.label} | {wanted} | {_number(target.measured)}{unit} | {result} |")
    if not rows:
        return []
    return ["| Target | Wanted | Measured | Result |", "|---|---|---:|---|", *rows, ""]


def render_markdown(report: Report, *, chart_name: str) -> str:
    machine = report.machine
    gpu = machine.get("gpu") or "none"
    versions = ", ".join(f"{name} {version}" for name, version in report.versions.items())
    lines = [
        f"## Benchmark results {report.date}",
        "",
        f"Machine: {machine['cpu_model']}, {machine['usable_cores']} cores, "
        f"{machine.get('memory_gib')} GiB RAM, GPU: {gpu}; load average (1 min) "
        f"{machine.get('load_average_1min_before', '?')} before the run, "
        f"{machine.get('load_average_1min_after', '?')} after.  ",
        f"Command: `{report.command}`{' (quick mode: smaller counts and inputs)' if report.quick else ''}; "
        f"run time {report.duration_s:.0f} s.  ",
        f"Versions: {versions}.",
        "",
        *_targets_markdown(report),
        f"![Benchmark chart]({chart_name})",
        "",
    ]
    for section in report.sections:
        lines += _section_markdown(section)
    return "\n".join(lines).rstrip() + "\n"


BARS_HEIGHT = 1.6
CURVES_HEIGHT = 8.0


def _curves_panel(axis: Any, section: Section) -> None:
    """Each series relative to its first point on log-log axes, with the slope-1 line of a linear cost."""
    import matplotlib
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    colours = matplotlib.colormaps["tab20"]
    xs: list[float] = []
    for index, (label, points) in enumerate(section.curves.items()):
        values = [(x, section.figure(key).value) for x, key in points]
        values = [(x, v) for x, v in values if v > 0]
        if not values:
            continue
        first = values[0][1]
        axis.plot(
            [x for x, _ in values],
            [v / first for _, v in values],
            marker="osD^v<>pPX*h"[index % 12],
            color=colours(index % 20),
            linewidth=1.2,
            markersize=4,
            label=label,
        )
        xs += [x for x, _ in values]
    if xs:
        low, high = min(xs), max(xs)
        axis.plot([low, high], [1, high / low], color="black", linestyle="--", linewidth=1, label="linear")
    axis.set_xscale("log")
    axis.set_yscale("log")
    if xs:
        axis.set_xticks(sorted(set(xs)), labels=[f"{x:,.0f}" for x in sorted(set(xs))])
    axis.xaxis.set_minor_formatter(NullFormatter())
    axis.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
    axis.yaxis.set_minor_formatter(NullFormatter())
    axis.set_title("\n".join(textwrap.wrap(section.title, 80)), fontsize=10, loc="left")
    axis.set_xlabel("catalog entries (N)", fontsize=8)
    axis.set_ylabel("cost relative to the smallest N", fontsize=8)
    axis.tick_params(labelsize=8)
    axis.grid(True, which="major", linewidth=0.4, alpha=0.6)
    axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)


def render_chart(report: Report, path: Path) -> None:
    """One horizontal bar chart per section that names chart figures; sections not run are listed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    charted = [s for s in report.sections if s.status == RAN and (s.chart or s.curves)]
    skipped = [s for s in report.sections if s.status != RAN]
    heights = [CURVES_HEIGHT if s.curves else BARS_HEIGHT for s in charted] or [BARS_HEIGHT]
    fig, axes = plt.subplots(
        len(heights),
        1,
        figsize=(9, 2.0 + sum(heights)),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    for axis, section in zip(axes[:, 0], charted, strict=False):
        if section.curves:
            _curves_panel(axis, section)
            continue
        figures = [section.figure(key) for key in section.chart]
        labels = [figure.label for figure in figures]
        values = [figure.value for figure in figures]
        bars = axis.barh(labels, values, color="#4C72B0")
        axis.bar_label(bars, labels=[_number(v) for v in values], padding=3, fontsize=8)
        # Wrapped: a long title starts where the bars do, right of long labels, and would run off the image.
        axis.set_title("\n".join(textwrap.wrap(section.title, 60)), fontsize=10, loc="left")
        axis.set_xlabel(figures[0].unit, fontsize=8)
        axis.tick_params(labelsize=8)
        axis.invert_yaxis()
        axis.margins(x=0.2)
    if not charted:
        axes[0, 0].set_axis_off()
    footer = f"{report.machine['cpu_model']}, {report.machine['usable_cores']} cores, {report.date}"
    if skipped:
        footer += " — " + "; ".join(f"{s.title}: {s.status}" for s in skipped)
    fig.text(0.01, 0.005, footer, fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)

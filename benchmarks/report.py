"""Write a run as `<date>-<machine>.json`, a Markdown table `.md` and a bar chart `.png`."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

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


def render_chart(report: Report, path: Path) -> None:
    """One horizontal bar chart per section that names chart figures; sections not run are listed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    charted = [s for s in report.sections if s.status == RAN and s.chart]
    skipped = [s for s in report.sections if s.status != RAN]
    panels = max(len(charted), 1)
    fig, axes = plt.subplots(panels, 1, figsize=(9, 2.0 + 1.6 * panels), squeeze=False)
    for axis, section in zip(axes[:, 0], charted, strict=False):
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

"""1. Cold start of a ResNet-50 ONNX archive: unpack + session creation (+ the config's warm-up, which
Triton runs during load) + first inference, each repetition in a fresh process, both sides interleaved.
"""

from __future__ import annotations

from benchmarks import artifacts
from benchmarks.context import RunContext
from benchmarks.ort_options import describe, session_options
from benchmarks.results import Section
from benchmarks.timing import run_child
from triton_mme.archive_inspection.archive import read_archive
from triton_mme.core.formats import Format

NAME = "cold_start"
TITLE = "1. Cold start: ResNet-50 ONNX archive (CPU)"
PHASES = {
    "unpack": "unpack",
    "session": "session creation",
    "warmup": "config warm-up",
    "first_inference": "first inference",
}


def run(ctx: RunContext, section: Section) -> None:
    project, _ = artifacts.project_archive(ctx, artifacts.resnet50_entry(), Format.ONNX)
    notebook = artifacts.notebook_resnet50(ctx)
    sides = {"notebook": ("Notebook-style", notebook), "project": ("Project", project)}
    repetitions = ctx.pick(7, 2)
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for _ in range(repetitions):
        for side, (_, archive) in sides.items():
            runs[side].append(run_child("benchmarks.cold_start_child", [str(archive)]))

    for side, (label, archive) in sides.items():
        config = read_archive(archive).config
        section.settings[f"{label} session"] = describe(session_options(config))
        section.settings[f"{label} warm-up requests"] = len(config.model_warmup)
        section.add(f"{side}.archive_mb", f"{label} archive size", archive.stat().st_size / 1e6, "MB")
    for side, (label, _) in sides.items():
        samples = runs[side]
        section.add_median(
            f"{side}.total", f"{label}: unpack + load + first inference", [r["total"] for r in samples], "s"
        )
        section.add_median(
            f"{side}.load_and_first",
            f"{label}: load + first inference (unpacked)",
            [r["load_and_first"] for r in samples],
            "s",
        )
        for phase, phase_label in PHASES.items():
            section.add_median(f"{side}.{phase}", f"{label}: {phase_label}", [r[phase] for r in samples], "s")

    section.ratio(
        "total",
        "Project / notebook-style, unpack + load + first inference",
        "project.total",
        "notebook.total",
    )
    section.ratio(
        "load_and_first",
        "Project / notebook-style, load + first inference",
        "project.load_and_first",
        "notebook.load_and_first",
    )
    section.target("Cold start (unpack + load + first inference) vs notebook-style", "total", "<=", 0.7)
    section.chart = ["notebook.total", "project.total", "notebook.load_and_first", "project.load_and_first"]
    section.notes.append(
        f"Median of {repetitions} fresh processes per side, sides interleaved; libraries are imported "
        "before the clock starts, as in a running Triton server."
    )
    section.notes.append(
        "Both sessions get the settings Triton's ONNX backend derives from each archive's config.pbtxt "
        "(the notebook config has none, i.e. ONNX Runtime defaults); thread counts are ONNX Runtime's "
        "default (one per core) on both sides unless the project's config sets them."
    )

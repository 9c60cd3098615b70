"""3. A RoBERTa-base encoder (random weights, sequence 128): notebook-style plain ONNX export vs the
project's ONNX artifact, throughput at batch 8 with each archive's own session settings.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from benchmarks import artifacts
from benchmarks.context import RunContext
from benchmarks.onnx_load import load_model_dir, model_file, unpack
from benchmarks.ort_options import describe, session_options
from benchmarks.results import Section
from benchmarks.timing import measure_side_by_side, throughput
from triton_mme.core.formats import Format

NAME = "text"
TITLE = "3. Text model: RoBERTa-base encoder, sequence 128 (CPU)"
BATCH = 8
# ONNX Runtime's transformer fusions (onnxruntime.transformers) replace subgraphs by these operators.
FUSED_OPERATORS = (
    "Attention",
    "MultiHeadAttention",
    "SkipLayerNormalization",
    "EmbedLayerNormalization",
    "BiasGelu",
    "FastGelu",
)
LABELS = {"notebook": "Plain export (notebook-style)", "project": "Project artifact"}


def fused_operator_count(path: Path) -> int:
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    counts = Counter(node.op_type for node in graph.node)
    return sum(counts[name] for name in FUSED_OPERATORS)


def run(ctx: RunContext, section: Section) -> None:
    project_archive, record = artifacts.project_archive(ctx, artifacts.text_entry(), Format.ONNX)
    notebook_archive = artifacts.notebook_text(ctx, record.outputs)
    models = {}
    for side, archive in (("notebook", notebook_archive), ("project", project_archive)):
        model_dir = unpack(archive, ctx.scratch / "text" / side)
        models[side] = load_model_dir(model_dir)
        section.settings[LABELS[side]] = describe(session_options(models[side].config))
        section.add(
            f"{side}.fused_operators",
            f"{LABELS[side]}: fused transformer operators in the graph",
            fused_operator_count(model_file(model_dir, models[side].config)),
            "nodes",
        )
    calls = {side: model.timed_call(BATCH) for side, model in models.items()}
    samples = measure_side_by_side(
        calls, warmup=ctx.pick(2, 1), repeat=ctx.pick(16, 2), rounds=ctx.pick(4, 2)
    )
    for side, timed in samples.items():
        section.add_samples(
            f"{side}.b{BATCH}", f"{LABELS[side]}, batch {BATCH}", timed, unit="ms", scale=1000
        )
        section.add(
            f"{side}.throughput",
            f"{LABELS[side]}, batch {BATCH} throughput",
            throughput(timed, BATCH),
            "sequences/s",
        )
    section.ratio(
        "throughput",
        "Project / plain export, batch-8 throughput",
        "project.throughput",
        "notebook.throughput",
    )
    section.target("Fused text model throughput vs plain export", "throughput", ">=", 1.3)
    section.chart = ["notebook.throughput", "project.throughput"]
    section.notes.append(
        "The plain export uses opset 11 with eager attention (opset 11 cannot express "
        "scaled_dot_product_attention); inputs are random token ids with a full attention mask."
    )

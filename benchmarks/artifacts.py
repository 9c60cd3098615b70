"""The models both sides of a comparison run: the project's archives (built by triton_mme.model_build from the
default catalog's settings, with random weights) and notebook-style exports of the same architectures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import baselines
from benchmarks.context import REPO_ROOT, RunContext
from triton_mme.catalog import Catalog, ModelEntry, load_catalog
from triton_mme.core.formats import Format, Weights
from triton_mme.core.manifest import ArchiveRecord, Manifest, TensorSpec

DEFAULT_CATALOG = REPO_ROOT / "models.yaml"
TEXT_SEQUENCE_LENGTH = 128
TEXT_CONFIG = "roberta-base"
SEED = 0
QUICK_MAX_BATCH_SIZE = 8


def resnet50_entry(formats: tuple[Format, ...] = (Format.ONNX,)) -> ModelEntry:
    """The default catalog's ResNet-50 with its own settings and random weights."""
    entry = load_catalog(DEFAULT_CATALOG).entry("resnet50")
    return entry.model_copy(update={"weights": Weights.RANDOM, "formats": formats})


def text_entry() -> ModelEntry:
    """The default catalog's RoBERTa settings at base size and sequence length 128, random weights."""
    entry = load_catalog(DEFAULT_CATALOG).entry("roberta-large")
    return entry.model_copy(
        update={
            "name": TEXT_CONFIG,
            "source": "huggingface:FacebookAI/roberta-base",
            "weights": Weights.RANDOM,
            "formats": (Format.ONNX,),
            "sequence_length": TEXT_SEQUENCE_LENGTH,
            "hf_config": TEXT_CONFIG,
        }
    )


def build_project(catalog: Catalog, out_dir: Path) -> Manifest:
    """The project's own build (export, verify, package) of a catalog, on CPU."""
    from triton_mme.model_build.pipeline import build_catalog

    return build_catalog(catalog, out_dir, progress=False)


def project_build(ctx: RunContext, entry: ModelEntry) -> tuple[Path, Manifest]:
    """The project's archives of one entry (built once per run) and the folder they are in."""
    key = f"project:{entry.name}:{','.join(f.value for f in entry.formats)}"
    if key not in ctx.cache:
        if ctx.quick:
            entry = quick_entry(entry)
        out_dir = ctx.scratch / "project" / key.replace(":", "-").replace(",", "-")
        ctx.cache[key] = (out_dir, build_project(Catalog(models=(entry,)), out_dir))
    built: tuple[Path, Manifest] = ctx.cache[key]
    return built


def project_archive(ctx: RunContext, entry: ModelEntry, fmt: Format) -> tuple[Path, ArchiveRecord]:
    out_dir, manifest = project_build(ctx, entry)
    record = manifest.find(entry.name, fmt.value)
    return out_dir / record.target_model, record


def quick_entry(entry: ModelEntry) -> ModelEntry:
    """--quick builds verify at batch 8 instead of max_batch_size; the archive's runtime settings stay."""
    size = min(entry.max_batch_size, QUICK_MAX_BATCH_SIZE)
    batching = entry.dynamic_batching
    preferred = tuple(s for s in batching.preferred_batch_sizes if s <= size)
    return entry.model_copy(
        update={
            "max_batch_size": size,
            "dynamic_batching": batching.model_copy(update={"preferred_batch_sizes": preferred}),
        }
    )


def resnet50_module() -> Any:
    import torch
    import torchvision

    torch.manual_seed(SEED)
    return torchvision.models.resnet50(weights=None).eval()


def text_config() -> Any:
    """The shipped RoBERTa-base architecture, resolved as the build resolves it (never downloaded)."""
    import transformers

    from triton_mme.sizing.hf_config import resolve_hf_config

    return transformers.AutoConfig.for_model(**resolve_hf_config(text_entry()))


def text_encoder(model: Any, output_names: list[str]) -> Any:
    """Positional (input_ids, attention_mask) -> named outputs, as a notebook wraps a Hugging Face model."""
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            result = self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
            return tuple(result[name] for name in output_names)

    return Encoder().eval()


def notebook_resnet50(ctx: RunContext) -> Path:
    """A notebook-style ResNet-50 archive (opset 11, minimal config)."""
    key = "notebook:resnet50"
    if key not in ctx.cache:
        import torch

        folder = ctx.scratch / "notebook" / "resnet50"
        onnx_path = baselines.export_onnx(
            resnet50_module(),
            (torch.randn(1, 3, 224, 224),),
            folder / "model.onnx",
            input_names=["input"],
            output_names=["output"],
        )
        config = baselines.notebook_config(
            "resnet50-onnx",
            max_batch_size=resnet50_entry().max_batch_size,
            inputs=[TensorSpec(name="input", datatype="FP32", dims=(3, 224, 224))],
            outputs=[TensorSpec(name="output", datatype="FP32", dims=(1000,))],
        )
        ctx.cache[key] = baselines.pack_archive(
            onnx_path, config, folder / "model.tar.gz", name="resnet50-onnx"
        )
    path: Path = ctx.cache[key]
    return path


def notebook_text(ctx: RunContext, outputs: tuple[TensorSpec, ...]) -> Path:
    """A notebook-style RoBERTa archive with the same outputs as the project's artifact.

    Opset 11 has no scaled_dot_product_attention, so the model uses the eager attention path,
    as the notebooks' transformers versions did.
    """
    key = "notebook:text"
    if key not in ctx.cache:
        import torch
        import transformers

        torch.manual_seed(SEED)
        model = transformers.AutoModel.from_config(text_config(), attn_implementation="eager").eval()
        names = [spec.name for spec in outputs]
        ids = torch.ones(1, TEXT_SEQUENCE_LENGTH, dtype=torch.long)
        folder = ctx.scratch / "notebook" / "text"
        onnx_path = baselines.export_onnx(
            text_encoder(model, names),
            (ids, torch.ones_like(ids)),
            folder / "model.onnx",
            input_names=["input_ids", "attention_mask"],
            output_names=names,
        )
        config_text = baselines.notebook_config(
            "roberta-onnx",
            max_batch_size=text_entry().max_batch_size,
            inputs=[
                TensorSpec(name=name, datatype="INT64", dims=(TEXT_SEQUENCE_LENGTH,))
                for name in ("input_ids", "attention_mask")
            ],
            outputs=list(outputs),
        )
        ctx.cache[key] = baselines.pack_archive(
            onnx_path, config_text, folder / "model.tar.gz", name="roberta-onnx"
        )
    path: Path = ctx.cache[key]
    return path

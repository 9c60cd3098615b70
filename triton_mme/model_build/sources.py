"""Load a catalog entry as a PyTorch module whose outputs are plain tensors.

`weights: pretrained` downloads (torchvision `weights="DEFAULT"`, Hugging Face `from_pretrained`);
`weights: random` builds the same architecture offline from a fixed seed, and for Hugging Face from a
configuration shipped in triton_mme/sizing/hf_configs or given in the catalog — never fetched.
A `checkpoint:` source loads the user's own weights from a verified local copy (model_build.checkpoint_files):
safetensors only, a Hugging Face folder with `local_files_only` and no remote code.
"""

from __future__ import annotations

import gc
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from triton_mme.catalog import CatalogError, ModelEntry
from triton_mme.catalog.checkpoints import CHECKPOINT_KIND, CheckpointKind, TensorHeader, read_hf_config
from triton_mme.core.errors import UserError, first_line, quoted
from triton_mme.core.formats import Weights
from triton_mme.core.manifest import ImagePreprocessing, TensorSpec
from triton_mme.core.samples import sample_inputs
from triton_mme.model_build.tokenizer_offline import offline_tokenizer_json
from triton_mme.sizing.hf_config import resolve_hf_config

SEED = 0
TEXT_INPUTS = ("input_ids", "attention_mask")
# Eager attention exports the MatMul/Softmax pattern that ONNX Runtime's transformer optimizer fuses.
HF_ATTENTION = "eager"
REFERENCE_CHUNK = 8
# torchvision's ImageNet normalisation and classic resize ratio (256 -> 224), for weights without a preset.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
DEFAULT_RESIZE_RATIO = 256 / 224


@dataclass(frozen=True)
class Companions:
    """What a client needs besides the archive to call the model: how to prepare a picture, and files
    (by role: "labels" as a JSON list of class names, "tokenizer" as tokenizer.json) recorded with it."""

    preprocessing: ImagePreprocessing | None = None
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class Expectation:
    """Inputs and PyTorch's outputs for them: what an export must reproduce."""

    feeds: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]


@dataclass
class LoadedModel:
    """A model ready to export: the module, its named inputs and the names of its outputs."""

    entry: ModelEntry
    module: torch.nn.Module
    inputs: tuple[TensorSpec, ...]
    output_names: tuple[str, ...]
    # Architecture facts the ONNX transformer optimizer needs (model type, heads, hidden size).
    transformer: dict[str, Any] = field(default_factory=dict)
    companions: Companions = field(default_factory=Companions)

    # PyTorch's outputs per (batch size, seed), kept once computed: exports are verified after the module
    # is released (see release()).
    expectations: dict[tuple[int, int], Expectation] = field(default_factory=dict, repr=False)

    def sample(self, batch_size: int, *, seed: int = SEED) -> dict[str, np.ndarray]:
        return sample_inputs(self.inputs, batch_size, seed=seed)

    def expected(self, batch_size: int, *, seed: int = SEED) -> Expectation:
        """Sample inputs of this batch size and PyTorch's outputs for them (computed once, then kept)."""
        key = (batch_size, seed)
        if key not in self.expectations:
            feeds = self.sample(batch_size, seed=seed)
            self.expectations[key] = Expectation(feeds, self.reference(feeds))
        return self.expectations[key]

    def release(self) -> None:
        """Drop the PyTorch module and its weights; only expected() results computed before stay usable.

        Called once every export that reads the module is written, so that optimisation, verification
        and packaging of a large model never hold its PyTorch weights next to the exported copy.
        """
        del self.module
        gc.collect()

    def example_inputs(self, batch_size: int, *, seed: int = SEED) -> tuple[torch.Tensor, ...]:
        feeds = self.sample(batch_size, seed=seed)
        return tuple(torch.from_numpy(feeds[spec.name]) for spec in self.inputs)

    @torch.inference_mode()
    def reference(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """PyTorch's own outputs, the ground truth every export is compared with.

        Computed in slices of REFERENCE_CHUNK samples (samples are independent in eval mode), which
        bounds the memory of a large model's reference at max_batch_size.
        """
        device = next(self.module.parameters()).device
        batch = len(next(iter(feeds.values())))
        parts: dict[str, list[np.ndarray]] = {n: [] for n in self.output_names}
        for start in range(0, batch, REFERENCE_CHUNK):
            chunk = [
                torch.from_numpy(feeds[s.name][start : start + REFERENCE_CHUNK]).to(device)
                for s in self.inputs
            ]
            for name, tensor in zip(self.output_names, self.module(*chunk), strict=True):
                parts[name].append(tensor.float().cpu().numpy())
        return {name: np.concatenate(chunks) for name, chunks in parts.items()}


class _ImageClassifier(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.model(images),)


class _TextClassifier(torch.nn.Module):
    """A sequence classifier's logits as a one-tensor tuple."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=True).logits,)


class _TextEncoder(torch.nn.Module):
    """Returns (last_hidden_state[, pooler_output]) as a tuple of tensors, not a ModelOutput."""

    def __init__(self, model: torch.nn.Module, with_pooler: bool) -> None:
        super().__init__()
        self.model = model
        self.with_pooler = with_pooler

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
        if self.with_pooler:
            return (out.last_hidden_state, out.pooler_output)
        return (out.last_hidden_state,)


def _effective(entry: ModelEntry, weights: Weights | None) -> Weights:
    return weights or entry.weights


def image_companions(model_name: str, image_shape: tuple[int, ...]) -> Companions:
    """The evaluation transform and class names of the model's torchvision weights (no download: both
    are metadata of the weights enum), the transform scaled to the input's height and width."""
    import torchvision

    crop = (image_shape[1], image_shape[2]) if len(image_shape) == 3 else (224, 224)
    try:
        default = torchvision.models.get_model_weights(model_name).DEFAULT
    except ValueError:  # an architecture without published weights
        default = None
    if default is None:
        preprocessing = ImagePreprocessing(
            resize_size=round(min(crop) * DEFAULT_RESIZE_RATIO),
            crop_size=crop,
            mean=IMAGENET_MEAN,
            std=IMAGENET_STD,
        )
        return Companions(preprocessing=preprocessing)
    preset = default.transforms()
    preprocessing = ImagePreprocessing(
        resize_size=round(min(crop) * preset.resize_size[0] / preset.crop_size[0]),
        crop_size=crop,
        mean=tuple(float(v) for v in preset.mean),
        std=tuple(float(v) for v in preset.std),
        interpolation=preset.interpolation.value,
    )
    categories = default.meta.get("categories")
    files = {"labels": json.dumps(list(categories)).encode("utf-8")} if categories else {}
    return Companions(preprocessing=preprocessing, files=files)


def tokenizer_json(source_id: str, sequence_length: int, *, local: bool = False) -> bytes:
    """The model's fast tokenizer as tokenizer.json, set to pad and truncate to the model's length, so a
    client can encode text with the `tokenizers` package alone (`local`: source_id is a checkpoint folder)."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(source_id, local_files_only=local)
    backend = Tokenizer.from_str(loaded.backend_tokenizer.to_str())
    backend.enable_truncation(max_length=sequence_length)
    backend.enable_padding(length=sequence_length, pad_id=loaded.pad_token_id, pad_token=loaded.pad_token)
    return backend.to_str().encode("utf-8")


def _torchvision(entry: ModelEntry, weights: Weights) -> LoadedModel:
    import torchvision

    torch.manual_seed(SEED)
    model = torchvision.models.get_model(
        entry.source_id, weights="DEFAULT" if weights is Weights.PRETRAINED else None
    )
    inputs = (TensorSpec(name="input", datatype="FP32", dims=entry.image_shape),)
    companions = image_companions(entry.source_id, entry.image_shape)
    return LoadedModel(entry, _ImageClassifier(model).eval(), inputs, ("output",), companions=companions)


def _huggingface(entry: ModelEntry, weights: Weights) -> LoadedModel:
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(SEED)
    if weights is Weights.PRETRAINED:
        model = transformers.AutoModel.from_pretrained(entry.source_id, attn_implementation=HF_ATTENTION)
        # Only pretrained models have a published tokenizer; a random one gets the offline stand-in.
        tokenizer = tokenizer_json(entry.source_id, entry.text_length)
    else:
        fields = resolve_hf_config(entry)
        config = transformers.AutoConfig.for_model(**fields)
        model = transformers.AutoModel.from_config(config, attn_implementation=HF_ATTENTION)
        tokenizer = offline_tokenizer_json(fields, entry.text_length, name=entry.name)
    return _text_model(entry, model, tokenizer, classifier=False)


def _text_model(entry: ModelEntry, model: Any, tokenizer: bytes, *, classifier: bool) -> LoadedModel:
    model.eval()
    length = entry.text_length
    inputs = tuple(TensorSpec(name=name, datatype="INT64", dims=(length,)) for name in TEXT_INPUTS)
    config = model.config
    transformer = {
        "model_type": config.model_type,
        "num_heads": config.num_attention_heads,
        "hidden_size": config.hidden_size,
    }
    companions = Companions(files={"tokenizer": tokenizer})
    if classifier:
        return LoadedModel(entry, _TextClassifier(model).eval(), inputs, ("logits",), transformer, companions)
    with_pooler = getattr(model, "pooler", None) is not None
    outputs = ("last_hidden_state", "pooler_output") if with_pooler else ("last_hidden_state",)
    return LoadedModel(
        entry, _TextEncoder(model, with_pooler).eval(), inputs, outputs, transformer, companions
    )


def _hf_folder(entry: ModelEntry, folder: Path) -> LoadedModel:
    """A Hugging Face folder: safetensors weights only, local files only, no remote code, in fp32."""
    import transformers

    from triton_mme.sizing.checkpoint_contract import config_labels
    from triton_mme.sizing.checkpoint_sources import hf_task

    transformers.logging.set_verbosity_error()
    config = read_hf_config(folder / "config.json", where=f"{folder}/config.json")
    classifier = hf_task(config) == "sequence-classification"
    auto = transformers.AutoModelForSequenceClassification if classifier else transformers.AutoModel
    where = f"model {quoted(entry.name)}: source: {entry.checkpoint_location.text}"
    try:
        model, loading = auto.from_pretrained(
            folder,
            local_files_only=True,
            use_safetensors=True,
            trust_remote_code=False,
            dtype=torch.float32,
            attn_implementation=HF_ATTENTION,
            output_loading_info=True,
        )
    except (OSError, RuntimeError, ValueError) as error:
        raise CatalogError(f"{where}: does not load: {first_line(error)}") from None
    refuse_partial_load(loading, where=where)
    tokenizer = tokenizer_json(str(folder), entry.text_length, local=True)
    loaded = _text_model(entry, model, tokenizer, classifier=classifier)
    names = list(entry.labels) if isinstance(entry.labels, tuple) else config_labels(config)
    if classifier and names:
        loaded.companions.files["labels"] = json.dumps(names).encode("utf-8")
    return loaded


def refuse_partial_load(loading: dict[str, Any], *, where: str) -> None:
    """Strict loading: from_pretrained fills a tensor the weights lack with random values and drops one the
    model lacks (saying so only in a log line), so its loading info must list nothing."""
    for info, wording in (
        ("missing_keys", "the model has tensors the weights lack"),
        ("unexpected_keys", "the weights have tensors the model lacks"),
        ("mismatched_keys", "tensors of another shape than the model's"),
        ("error_msgs", "errors"),
    ):
        found = sorted(str(item) for item in loading.get(info) or ())
        if found:
            raise CatalogError(
                f"{where}: does not load strictly: {wording} ({len(found)}, first {found[0]!r}); "
                "allowed: the weights save_pretrained wrote for this config's model"
            )


def _state_dict(entry: ModelEntry, path: Path) -> LoadedModel:
    """A torchvision architecture with the checkpoint's number of classes and its tensors (strictly)."""
    import torchvision
    from safetensors.torch import load_file

    from triton_mme.sizing.checkpoint_sources import state_dict_classes

    tensors = load_file(path)
    headers = {k: TensorHeader(str(v.dtype), tuple(v.shape)) for k, v in tensors.items()}
    where = f"model {quoted(entry.name)}: source: {entry.checkpoint_location.text}"
    classes = state_dict_classes(headers, entry.architecture_id, where=where)
    torch.manual_seed(SEED)
    model = torchvision.models.get_model(entry.architecture_id, weights=None, num_classes=classes)
    try:
        model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in tensors.items()})
    except RuntimeError as error:
        raise CatalogError(f"{where}: does not load into {entry.architecture}: {first_line(error)}") from None
    inputs = (TensorSpec(name="input", datatype="FP32", dims=entry.image_shape),)
    # The architecture's evaluation transform; not its class names, which are the fine-tune's own (`labels:`).
    preprocessing = image_companions(entry.architecture_id, entry.image_shape).preprocessing
    labels = entry.labels if isinstance(entry.labels, tuple) else None
    files = {"labels": json.dumps(list(labels)).encode("utf-8")} if labels else {}
    companions = Companions(preprocessing=preprocessing, files=files)
    return LoadedModel(entry, _ImageClassifier(model).eval(), inputs, ("output",), companions=companions)


@dataclass
class PrebuiltOnnx(LoadedModel):
    """A model the user exported to ONNX: no PyTorch module; its own ONNX Runtime outputs are the reference
    (so the parity check shows only that it runs at each verified batch size) and the golden data."""

    model_file: Path = Path()

    def reference(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from triton_mme.model_build import runtimes

        session = runtimes.onnx_session(self.model_file)
        outputs = runtimes.run_onnx(session, feeds)
        return {name: outputs[name] for name in self.output_names}

    def release(self) -> None:
        """Nothing to release: there is no PyTorch module."""


def _prebuilt_onnx(entry: ModelEntry, path: Path) -> LoadedModel:
    from triton_mme.model_build.exporters.onnx import graph_tensors
    from triton_mme.model_build.inspection import check_onnx_model

    where = f"model {quoted(entry.name)}: source: {entry.checkpoint_location.text}"
    # Inspected before ONNX Runtime opens it: standard domains only, no tensor in an external file (which ONNX
    # Runtime would read from any path the file names), as for an archive built elsewhere.
    try:
        check_onnx_model(where, path)
    except UserError as error:
        raise CatalogError(str(error)) from None
    try:
        inputs, outputs = graph_tensors(path)
    except Exception as error:
        raise CatalogError(f"{where}: not a usable ONNX model: {first_line(error)}") from None
    for spec in inputs:
        if any(dim < 1 for dim in spec.dims):
            raise CatalogError(
                f"{where}: input {quoted(spec.name)} has a dynamic dimension besides the batch "
                f"({list(spec.dims)}); allowed: fixed dimensions after a dynamic batch axis"
            )
    names = tuple(spec.name for spec in outputs)
    return PrebuiltOnnx(entry, torch.nn.Identity(), inputs, names, model_file=path)


def load_model(
    entry: ModelEntry, *, weights: Weights | None = None, checkpoint: Path | None = None
) -> LoadedModel:
    """Instantiate a catalog entry (weights overridable, e.g. random for an offline build). A checkpoint
    entry needs `checkpoint`: the verified local copy of its source (checkpoint_files.materialize)."""
    if entry.source_kind == CHECKPOINT_KIND:
        if checkpoint is None:
            raise CatalogError(f"model {quoted(entry.name)}: its checkpoint was not fetched and verified")
        if entry.checkpoint_kind is CheckpointKind.STATE_DICT:
            return _state_dict(entry, checkpoint)
        if entry.checkpoint_kind is CheckpointKind.ONNX_FILE:
            return _prebuilt_onnx(entry, checkpoint)
        return _hf_folder(entry, checkpoint)
    chosen = _effective(entry, weights)
    loader = _torchvision if entry.source_kind == "torchvision" else _huggingface
    return loader(entry, chosen)

"""What a checkpoint's own files say about the catalog entry that names it, checked at lock and synthesis.

The build on the runner would otherwise find each of these as PyTorch's raw error (or, for class names, not at
all): a `sequence_length` beyond the model's position embeddings, an `input_shape` the architecture cannot
take, class names that do not match the classifier's head, a tokenizer whose ids the model has no embedding
for. Each refusal is one line naming both values. Files and JSON only (no PyTorch), so synthesis runs it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from triton_mme.catalog import ModelEntry
from triton_mme.catalog.checkpoints import CheckpointError, TensorHeader
from triton_mme.core.bounded import DocumentError, read_json

# RoBERTa-type models number positions from padding_idx + 1 (transformers'
# create_position_ids_from_input_ids), so `max_position_embeddings: 514` holds 512 tokens; BERT and
# DistilBERT number them from 0.
POSITION_OFFSET = {"roberta": 2, "xlm-roberta": 2, "camembert": 2}
# The classifier's last layer per model type (transformers' *ForSequenceClassification): [labels, hidden].
CLASSIFIER_WEIGHT = {
    "bert": "classifier.weight",
    "distilbert": "classifier.weight",
    "roberta": "classifier.out_proj.weight",
    "xlm-roberta": "classifier.out_proj.weight",
    "camembert": "classifier.out_proj.weight",
}
# Every torchvision classification model's stem takes RGB images.
TORCHVISION_CHANNELS = 3
MAX_TOKENIZER_BYTES = 64 * 1024 * 1024


def config_labels(config: dict[str, Any]) -> list[str] | None:
    """The class names of config.json's `id2label` in index order, or None where it has none (or a gap)."""
    id2label = config.get("id2label")
    if not isinstance(id2label, dict) or not id2label:
        return None
    try:
        by_index = {int(index): str(label) for index, label in id2label.items()}
    except (TypeError, ValueError):
        return None
    if sorted(by_index) != list(range(len(by_index))):
        return None
    return [by_index[i] for i in range(len(by_index))]


def check_text_contract(
    entry: ModelEntry, config: dict[str, Any], folder: Path, heads: dict[str, TensorHeader], *, where: str
) -> None:
    """sequence_length against the positions, the head against id2label / labels, the tokenizer's ids
    against the vocabulary."""
    model_type = str(config.get("model_type"))
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int):
        usable = positions - POSITION_OFFSET.get(model_type, 0)
        if entry.text_length > usable:
            raise CheckpointError(
                f"{where}: sequence_length {entry.text_length} is more than its config.json allows "
                f"(max_position_embeddings {positions}: {usable} tokens for {model_type}); "
                f"allowed 1..{usable}"
            )
    weight = heads.get(CLASSIFIER_WEIGHT.get(model_type, ""))
    if weight is not None and weight.shape:
        classes = weight.shape[0]
        named = list(entry.labels) if isinstance(entry.labels, tuple) else config_labels(config)
        origin = "labels" if isinstance(entry.labels, tuple) else "config.json id2label"
        if named is not None and len(named) != classes:
            raise CheckpointError(
                f"{where}: {origin} names {len(named)} classes, its classifier head has {classes}; allowed: "
                f"{classes} names, one per output"
            )
    _check_tokenizer(config, folder / "tokenizer.json", where=where)


def _check_tokenizer(config: dict[str, Any], path: Path, *, where: str) -> None:
    vocab_size = config.get("vocab_size")
    if not isinstance(vocab_size, int) or not path.is_file():
        return
    try:
        tokenizer = read_json(path, max_bytes=MAX_TOKENIZER_BYTES, where=f"{where}/tokenizer.json")
    except DocumentError as error:
        raise CheckpointError(str(error)) from None
    model = tokenizer.get("model") if isinstance(tokenizer, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    ids: list[int] = []
    if isinstance(vocab, dict):
        ids += [v for v in vocab.values() if isinstance(v, int)]
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...], the id is the position
        ids.append(len(vocab) - 1)
    added = tokenizer.get("added_tokens") if isinstance(tokenizer, dict) else None
    ids += [t["id"] for t in added or [] if isinstance(t, dict) and isinstance(t.get("id"), int)]
    largest = max(ids, default=-1)
    if largest >= vocab_size:
        kind = model.get("type") if isinstance(model, dict) else None
        raise CheckpointError(
            f"{where}: tokenizer.json ({kind or 'a'} tokenizer) gives token ids up to {largest}, its "
            f"config.json's {config.get('model_type')} model has vocab_size {vocab_size}; allowed: the "
            "tokenizer saved with this model (tokenizer.save_pretrained into the same folder)"
        )


def check_image_contract(
    entry: ModelEntry, tensors: dict[str, TensorHeader], classes: int, *, where: str
) -> None:
    """input_shape against the architecture (RGB; a ViT's fixed image size), labels against the head."""
    shape = entry.image_shape
    architecture = entry.architecture_id
    if len(shape) != 3 or shape[0] != TORCHVISION_CHANNELS:
        raise CheckpointError(
            f"{where}: input_shape {list(shape)} does not fit torchvision:{architecture}, which takes "
            f"[{TORCHVISION_CHANNELS}, height, width] (RGB); allowed e.g. [3, 224, 224]"
        )
    size = _vit_image_size(tensors)
    if size is not None and tuple(shape[1:]) != (size, size):
        raise CheckpointError(
            f"{where}: input_shape {list(shape)}: torchvision:{architecture}'s position embeddings fix its "
            f"images at {size}x{size}; allowed [3, {size}, {size}]"
        )
    if isinstance(entry.labels, tuple) and len(entry.labels) != classes:
        raise CheckpointError(
            f"{where}: labels names {len(entry.labels)} classes, the state dict's head has {classes}; "
            f"allowed: {classes} names, one per output"
        )


def _vit_image_size(tensors: dict[str, TensorHeader]) -> int | None:
    """A torchvision ViT's image size from its patch projection and position embeddings, else None."""
    patch = tensors.get("conv_proj.weight")
    positions = tensors.get("encoder.pos_embedding")
    if patch is None or positions is None or len(patch.shape) != 4 or len(positions.shape) != 3:
        return None
    side = math.isqrt(positions.shape[1] - 1)
    return side * patch.shape[2] if side * side == positions.shape[1] - 1 else None

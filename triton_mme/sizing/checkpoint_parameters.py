"""The parameter count of a Hugging Face checkpoint folder: the model its config.json makes, which must be the
model its safetensors weights hold.

The build instantiates the config's model first and then loads the weights into it, so the memory and time
checks must count the config's model, not the weights: a config declaring a 3-billion-parameter encoder beside
a few thousand parameters of weights would otherwise pass synthesis and fill the runner's memory before the
load refuses it. The count is build_memory.hf_parameters (AutoModel's, written out per model type) plus the
sequence classifier's head; every number is bounded before any arithmetic, and the weights' floating-point
elements (integer buffers such as position_ids are not parameters) must equal it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from triton_mme.catalog.checkpoints import CheckpointError, TensorHeader
from triton_mme.core.errors import quoted
from triton_mme.core.limits import MAX_TENSOR_DIM
from triton_mme.core.numbers import whole_number
from triton_mme.sizing.build_memory import BERT_LIKE_TYPES, hf_parameters

# The config fields the count reads (BERT's names and DistilBERT's), each a size of some tensor.
COUNTED_FIELDS = (
    "hidden_size",
    "vocab_size",
    "max_position_embeddings",
    "type_vocab_size",
    "num_hidden_layers",
    "intermediate_size",
    "dim",
    "n_layers",
    "hidden_dim",
    "num_labels",
)
# safetensors dtypes that hold parameters (the integer and boolean ones hold buffers).
FLOAT_DTYPES = frozenset({"F8_E5M2", "F8_E4M3", "F16", "BF16", "F32", "F64"})


def _bounded_config(config: dict[str, Any], *, where: str) -> dict[str, Any]:
    for field in COUNTED_FIELDS:
        if field in config:
            number = whole_number(config[field])
            if number is None or not isinstance(config[field], int) or not 0 <= number <= MAX_TENSOR_DIM:
                raise CheckpointError(
                    f"{where}: {field} is {str(config[field])[:40]!r}; allowed a whole number "
                    f"0..{MAX_TENSOR_DIM:,}"
                )
    labels = config.get("id2label")
    if labels is not None and (not isinstance(labels, dict) or len(labels) > MAX_TENSOR_DIM):
        raise CheckpointError(f"{where}: id2label is not a mapping of class ids to names; allowed one")
    return config


def classes(config: dict[str, Any]) -> int:
    """The classifier's outputs, as transformers' PretrainedConfig counts them (id2label, else 2)."""
    labels = config.get("id2label")
    if isinstance(labels, dict) and labels:
        return len(labels)
    return int(config.get("num_labels", 2))


def model_parameters(config: dict[str, Any], *, classifier: bool, where: str) -> int:
    """Parameters of the model the build makes of this config (AutoModel, or its sequence classifier)."""
    bounded = _bounded_config(config, where=where)
    counted = hf_parameters(bounded)
    if counted is None:
        raise CheckpointError(
            f"{where}: model_type {quoted(config.get('model_type'))} has no parameter count"
        )
    if not classifier:
        return counted
    labels = classes(bounded)
    if config.get("model_type") in BERT_LIKE_TYPES:
        # BERT keeps its pooler and adds a linear layer; RoBERTa's kinds swap the pooler for a dense layer of
        # the same size and add the projection: the same count.
        hidden = int(bounded.get("hidden_size", 768))
        return counted + hidden * labels + labels
    hidden = int(bounded.get("dim", 768))
    return (
        counted + hidden * hidden + hidden + hidden * labels + labels
    )  # DistilBERT: pre_classifier, classifier


def agreed_parameters(
    config: dict[str, Any], tensors: Iterable[TensorHeader], *, classifier: bool, where: str
) -> int:
    """The config's model's parameter count, when the weights hold exactly that many; CheckpointError (one
    line) otherwise."""
    expected = model_parameters(config, classifier=classifier, where=where)
    held = sum(tensor.elements for tensor in tensors if tensor.dtype in FLOAT_DTYPES)
    if held != expected:
        raise CheckpointError(
            f"{where}: describes a model of {expected:,} parameters but the safetensors weights "
            f"hold {held:,}; "
            "allowed: the config saved with these weights (save_pretrained writes both)"
        )
    return expected

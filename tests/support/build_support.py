"""Small, random-initialised models that export in seconds on a CPU."""

from __future__ import annotations

from typing import Any

from triton_mme.core.catalog import Catalog, ModelEntry, parse_catalog

TINY_ROBERTA = {
    "model_type": "roberta",
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "vocab_size": 1000,
    "max_position_embeddings": 130,
}


def tiny_cnn(**overrides: Any) -> dict[str, Any]:
    return {
        "name": "tiny-cnn",
        "source": "torchvision:squeezenet1_1",
        "weights": "random",
        "formats": ["onnx", "torchscript"],
        "max_batch_size": 4,
        "input_shape": [3, 64, 64],
        **overrides,
    }


def tiny_roberta(**overrides: Any) -> dict[str, Any]:
    return {
        "name": "tiny-roberta",
        "source": "huggingface:example/tiny-roberta",
        "weights": "random",
        "formats": ["onnx", "torchscript"],
        "max_batch_size": 4,
        "sequence_length": 16,
        "hf_config": TINY_ROBERTA,
        **overrides,
    }


def catalog_of(*entries: dict[str, Any]) -> Catalog:
    return parse_catalog({"models": list(entries)})


def entry_of(raw: dict[str, Any]) -> ModelEntry:
    return catalog_of(raw).models[0]

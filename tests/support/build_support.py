"""Small, random-initialised models that export in seconds on a CPU."""

from __future__ import annotations

from typing import Any

from benchmarks.checkpoints import TINY_ROBERTA_CLASSIFIER
from triton_mme.catalog import Catalog, ModelEntry, parse_catalog

# The tiny RoBERTa of the generated fine-tunes (benchmarks/checkpoints.py), as a bare encoder.
TINY_ROBERTA = {key: value for key, value in TINY_ROBERTA_CLASSIFIER.items() if key != "num_labels"}


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

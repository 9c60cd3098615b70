"""Class names for classifier outputs and the top-k reading of a batch of scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


class Prediction(NamedTuple):
    class_index: int
    label: str
    probability: float


def class_names(source: str) -> list[str] | None:
    """The category names torchvision ships with the source's weights (no download), if any."""
    kind, _, model = source.partition(":")
    if kind != "torchvision":
        return None
    import torchvision

    try:
        categories = torchvision.models.get_model_weights(model).DEFAULT.meta.get("categories")
    except ValueError:
        return None
    return list(categories) if categories else None


def top_k(scores: np.ndarray, names: Sequence[str] | None, k: int = 5) -> list[list[Prediction]]:
    """The k most likely classes of each row; softmax turns logits into probabilities."""
    if scores.ndim != 2:
        raise ValueError(f"expected [batch, classes] scores, got shape {list(scores.shape)}")
    logits = scores.astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    labelled = names is not None and len(names) == scores.shape[1]
    rows = []
    for row in probabilities:
        best = np.argsort(-row, kind="stable")[:k]
        rows.append(
            [
                Prediction(int(i), names[i] if labelled and names else f"class {i}", float(row[i]))
                for i in best
            ]
        )
    return rows

"""Class names for classifier outputs and the top-k reading of a batch of scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from triton_mme.client.inputs import InputError
from triton_mme.core.bounded import load_json
from triton_mme.core.limits import MAX_LABELS_BYTES


class Prediction(NamedTuple):
    class_index: int
    label: str
    probability: float


def read_labels(content: bytes, where: str) -> list[str]:
    """Class names from a labels file (a JSON list of strings, as the build records them)."""
    try:
        names = load_json(content, where=where, max_bytes=MAX_LABELS_BYTES)
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise InputError(f"{where}: not a labels file; allowed: a JSON list of class names")
    return names


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

"""The archive formats and weight sources the catalog speaks of (plain enums, cheap to import)."""

from __future__ import annotations

from enum import StrEnum


class Format(StrEnum):
    ONNX = "onnx"
    TORCHSCRIPT = "torchscript"
    TENSORRT = "tensorrt"


class Weights(StrEnum):
    PRETRAINED = "pretrained"
    RANDOM = "random"
    # The weights of the user's own checkpoint (`source: checkpoint:...`): neither downloaded nor random.
    CHECKPOINT = "checkpoint"

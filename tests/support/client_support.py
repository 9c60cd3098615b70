"""Shared by the client tests and the tools that call models: archive keys, test images, token ids."""

from __future__ import annotations

from pathlib import Path

import numpy as np

RESNET_KEY = "resnet50-onnx-0123456789abcdef.tar.gz"
ROBERTA_KEY = "roberta-large-onnx-fedcba9876543210.tar.gz"
SEQUENCE_LENGTH = 16
TOKEN_IDS = {"<pad>": 0, "<unk>": 1, "<s>": 2, "</s>": 3, "hello": 4, "world": 5, "triton": 6}


def write_image(path: Path, size: tuple[int, int] = (320, 240), seed: int = 0) -> Path:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return path

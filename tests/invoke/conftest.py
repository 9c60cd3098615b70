"""A manifest with an image and a text model, test images and a tokenizer built on disk (no downloads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from model_build.manifest import ArchiveRecord, Manifest, TensorSpec

RESNET_KEY = "resnet50-onnx-0123456789abcdef.tar.gz"
ROBERTA_KEY = "roberta-large-onnx-fedcba9876543210.tar.gz"
SEQUENCE_LENGTH = 16


def _record(
    name: str,
    target: str,
    source: str,
    inputs: tuple[TensorSpec, ...],
    outputs: tuple[TensorSpec, ...],
    max_batch_size: int,
) -> ArchiveRecord:
    return ArchiveRecord(
        name=name,
        format="onnx",
        target_model=target,
        sha256="0" * 64,
        size_bytes=1,
        source=source,
        weights="random",
        max_batch_size=max_batch_size,
        inputs=inputs,
        outputs=outputs,
    )


@pytest.fixture
def manifest_path(tmp_path: Path) -> Path:
    resnet = _record(
        "resnet50",
        RESNET_KEY,
        "torchvision:resnet50",
        (TensorSpec(name="input", datatype="FP32", dims=(3, 224, 224)),),
        (TensorSpec(name="output", datatype="FP32", dims=(1000,)),),
        max_batch_size=8,
    )
    roberta = _record(
        "roberta-large",
        ROBERTA_KEY,
        "huggingface:FacebookAI/roberta-large",
        (
            TensorSpec(name="input_ids", datatype="INT64", dims=(SEQUENCE_LENGTH,)),
            TensorSpec(name="attention_mask", datatype="INT64", dims=(SEQUENCE_LENGTH,)),
        ),
        (TensorSpec(name="last_hidden_state", datatype="FP32", dims=(SEQUENCE_LENGTH, 4)),),
        max_batch_size=4,
    )
    path = tmp_path / "manifest.json"
    path.write_text(Manifest(archives=(resnet, roberta)).to_json(), encoding="utf-8")
    return path


def write_image(path: Path, size: tuple[int, int] = (320, 240), seed: int = 0) -> Path:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return path


@pytest.fixture
def image_path(tmp_path: Path) -> Path:
    return write_image(tmp_path / "photo.png")


TOKEN_IDS = {"<pad>": 0, "<unk>": 1, "<s>": 2, "</s>": 3, "hello": 4, "world": 5, "triton": 6}


@pytest.fixture
def tokenizer_dir(tmp_path: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(TOKEN_IDS, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>")
    directory = tmp_path / "tokenizer"
    tokenizer.save_pretrained(directory)
    return directory

"""A manifest with an image and a text model, test images and a tokenizer built on disk (no downloads)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from client_support import RESNET_KEY, ROBERTA_KEY, SEQUENCE_LENGTH, TOKEN_IDS, write_image

from triton_mme.core.manifest import ArchiveRecord, ImagePreprocessing, Manifest, TensorSpec
from triton_mme.core.naming import companion_file_name
from triton_mme.model_build.sources import image_companions


def _record(
    name: str,
    target: str,
    source: str,
    inputs: tuple[TensorSpec, ...],
    outputs: tuple[TensorSpec, ...],
    max_batch_size: int,
    preprocessing: ImagePreprocessing | None = None,
    files: dict[str, str] | None = None,
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
        preprocessing=preprocessing,
        files=files or {},
    )


@pytest.fixture
def manifest_path(tmp_path: Path) -> Path:
    """As a build writes it: ResNet-50's preprocessing and labels (from torchvision's weights metadata)."""
    companions = image_companions("resnet50", (3, 224, 224))
    labels = companions.files["labels"]
    labels_name = companion_file_name("labels", hashlib.sha256(labels).hexdigest())
    (tmp_path / labels_name).write_bytes(labels)
    resnet = _record(
        "resnet50",
        RESNET_KEY,
        "torchvision:resnet50",
        (TensorSpec(name="input", datatype="FP32", dims=(3, 224, 224)),),
        (TensorSpec(name="output", datatype="FP32", dims=(1000,)),),
        max_batch_size=8,
        preprocessing=companions.preprocessing,
        files={"labels": labels_name},
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


@pytest.fixture
def image_path(tmp_path: Path) -> Path:
    return write_image(tmp_path / "photo.png")


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

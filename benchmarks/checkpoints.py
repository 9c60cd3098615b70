"""Tiny "fine-tuned" checkpoints, made offline: what a user brings by the hundred, at a size a laptop builds.

- `write_state_dicts`: one torchvision architecture (SqueezeNet 1.1 by default, 0.7 M parameters with 10
  classes) whose classifier differs per variant, each saved as `<variant>.safetensors`;
- `write_hf_folders`: a tiny RoBERTa sequence classifier per variant, saved by `save_pretrained` with
  safetensors weights and the project's offline tokenizer as tokenizer.json.

Each variant's weights come from its own seed, so every checkpoint (and so every pin) differs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TINY_ROBERTA_CLASSIFIER: dict[str, Any] = {
    "model_type": "roberta",
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "vocab_size": 1000,
    "max_position_embeddings": 130,
    "num_labels": 3,
}


def variant_names(count: int) -> list[str]:
    return [f"c{index:04d}" for index in range(count)]


def write_state_dicts(
    folder: Path, count: int, *, architecture: str = "squeezenet1_1", classes: int = 10
) -> list[Path]:
    """`count` state dicts of `architecture` with `classes` classes: one body, a head per variant."""
    import torch
    import torchvision
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = torchvision.models.get_model(architecture, weights=None, num_classes=classes)
    base = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    paths = []
    for index, variant in enumerate(variant_names(count)):
        generator = torch.Generator().manual_seed(index + 1)
        tensors = dict(base)
        for key, tensor in base.items():
            if tensor.is_floating_point() and tensor.shape and tensor.shape[0] == classes:
                tensors[key] = (tensor + 0.01 * torch.randn(tensor.shape, generator=generator)).contiguous()
        path = folder / f"{variant}.safetensors"
        save_file(tensors, path)
        paths.append(path)
    return paths


def write_hf_folders(folder: Path, count: int, *, config: dict[str, Any] | None = None) -> list[Path]:
    """`count` tiny RoBERTa sequence classifiers, each a folder as save_pretrained writes it."""
    import torch
    import transformers

    from triton_mme.model_build.tokenizer_offline import offline_tokenizer_json

    fields = dict(config or TINY_ROBERTA_CLASSIFIER)
    tokenizer = offline_tokenizer_json(fields, 16, name="tiny-roberta")
    paths = []
    for index, variant in enumerate(variant_names(count)):
        torch.manual_seed(index + 1)
        hf_config = transformers.AutoConfig.for_model(**fields)
        hf_config.architectures = ["RobertaForSequenceClassification"]
        model = transformers.AutoModelForSequenceClassification.from_config(hf_config)
        target = folder / variant
        model.save_pretrained(target, safe_serialization=True)
        (target / "tokenizer.json").write_bytes(tokenizer)
        (target / "tokenizer_config.json").write_text(
            json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 128}),
            encoding="utf-8",
        )
        paths.append(target)
    return paths

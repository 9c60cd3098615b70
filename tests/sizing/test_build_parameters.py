"""The parameter counts synthesis checks the build's memory with match what PyTorch builds."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torchvision
import transformers
from build_support import tiny_roberta

from triton_mme.catalog import parse_catalog
from triton_mme.sizing.build_memory import TORCHVISION_PARAMETERS, hf_parameters
from triton_mme.sizing.hf_config import resolve_hf_config, shipped_hf_configs


def test_the_torchvision_table_is_torchvisions_own_metadata() -> None:
    recorded = {
        name: max(w.meta["num_params"] for w in torchvision.models.get_model_weights(name))
        for name in torchvision.models.list_models()
    }
    assert recorded == TORCHVISION_PARAMETERS


def _counted_by_transformers(config: dict[str, Any]) -> int:
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(transformers.AutoConfig.for_model(**config))
    return sum(p.numel() for p in model.parameters())


CONFIGS = {
    **{name: {"shipped": name} for name in shipped_hf_configs()},
    "tiny-roberta": {"catalog": tiny_roberta()["hf_config"]},
    "bert": {"catalog": {"model_type": "bert", "hidden_size": 96, "num_hidden_layers": 3,
                         "intermediate_size": 200, "num_attention_heads": 4, "vocab_size": 1000}},
    "xlm-roberta": {"catalog": {"model_type": "xlm-roberta", "hidden_size": 64, "num_hidden_layers": 2,
                                "intermediate_size": 128, "num_attention_heads": 2}},
    "distilbert": {"catalog": {"model_type": "distilbert", "dim": 64, "n_layers": 2, "hidden_dim": 128,
                               "n_heads": 2}},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_hugging_face_counts_match_the_models_transformers_builds(name: str) -> None:
    spec = CONFIGS[name]
    hf_config = spec.get("catalog", spec.get("shipped"))
    raw = {**tiny_roberta(), "hf_config": hf_config}
    entry = parse_catalog({"models": [raw]}).models[0]
    config = resolve_hf_config(entry)
    assert hf_parameters(config) == _counted_by_transformers(config)

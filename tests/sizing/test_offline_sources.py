"""Catalog sources resolved at synth without PyTorch, a GPU or the network."""

from __future__ import annotations

from typing import Any

import pytest
from boundaries import FORBIDDEN_IN_CORE, loaded_after

from triton_mme.catalog import parse_catalog
from triton_mme.core.errors import quoted
from triton_mme.sizing.offline_sources import (
    HUB_REPO_ID,
    check_sources,
    shipped_hf_config_names,
    source_problem,
    torchvision_models,
)


def entry(source: str, **fields: Any) -> Any:
    model = {"name": "m", "source": source, "weights": "random", "formats": ["onnx"], "max_batch_size": 8}
    return parse_catalog({"models": [{**model, **fields}]}).models[0]


def test_the_recorded_registry_is_the_installed_torchvisions() -> None:
    torchvision = pytest.importorskip("torchvision")
    # Re-record with: python -c "import torchvision.models as m; print(*m.list_models(), sep='\n')"
    #   > triton_mme/sizing/torchvision_models.txt
    assert list(torchvision_models()) == torchvision.models.list_models()


def test_resolving_sources_imports_no_deep_learning_library() -> None:
    loaded = loaded_after(
        "from triton_mme.sizing.offline_sources import check_sources, torchvision_models\n"
        "torchvision_models()"
    )
    assert loaded.isdisjoint(FORBIDDEN_IN_CORE), sorted(loaded & set(FORBIDDEN_IN_CORE))


@pytest.mark.parametrize("name", ["resnet50", "vit_b_16", "efficientnet_b0", "mobilenet_v3_small"])
def test_torchvision_registry_names_resolve(name: str) -> None:
    assert source_problem(entry(f"torchvision:{name}")) is None


def test_an_unknown_torchvision_name_is_refused_with_the_closest() -> None:
    assert source_problem(entry("torchvision:resnet5000")) == (
        "model 'm': source: torchvision has no model 'resnet5000'; did you mean resnet50? allowed: a name of "
        f"torchvision.models.list_models() ({len(torchvision_models())} names, e.g. resnet50)"
    )


@pytest.mark.parametrize("model_id", ["FacebookAI/roberta-large", "roberta-base", "org_1/model.v2-x"])
def test_hub_ids_follow_the_hubs_rule(model_id: str) -> None:
    assert HUB_REPO_ID.fullmatch(model_id)


@pytest.mark.parametrize(
    "model_id", ["a/b/c", "-lead", "trail.", "double--dash", "dot..dot", "a b", "x" * 97]
)
def test_what_the_hub_refuses_is_refused(model_id: str) -> None:
    assert not HUB_REPO_ID.fullmatch(model_id)
    assert source_problem(entry(f"huggingface:{model_id}", weights="pretrained")) == (
        f"model 'm': source: {quoted(model_id)} is not a Hugging Face model id; allowed: [namespace/]name of "
        "letters, digits, '-', '_' and '.', e.g. FacebookAI/roberta-large"
    )


def test_random_weights_need_a_shipped_config_or_a_mapping() -> None:
    assert source_problem(entry("huggingface:FacebookAI/roberta-large")) is None
    assert source_problem(entry("huggingface:x/y", hf_config={"model_type": "bert"})) is None
    assert source_problem(entry("huggingface:FacebookAI/roberta-larg")) == (
        "model 'm': hf_config: no shipped config 'roberta-larg'; did you mean roberta-large? allowed: a "
        f"mapping of config fields or one of: {', '.join(shipped_hf_config_names())}"
    )


def test_pretrained_weights_need_no_config_but_a_named_one_must_be_shipped() -> None:
    assert source_problem(entry("huggingface:google-bert/bert-base-uncased", weights="pretrained")) is None
    assert source_problem(
        entry("huggingface:FacebookAI/roberta-large", weights="pretrained", hf_config="roberta-lage")
    ) == (
        "model 'm': hf_config: no shipped config 'roberta-lage'; did you mean roberta-large? allowed: a "
        f"mapping of config fields or one of: {', '.join(shipped_hf_config_names())}"
    )


def test_the_default_catalog_resolves() -> None:
    from triton_mme.catalog import load_catalog

    check_sources(load_catalog("models.yaml"), origin="models.yaml")

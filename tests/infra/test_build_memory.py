"""Synthesis refuses a catalog whose build would not fit the runner's memory, in one line, without PyTorch."""

from __future__ import annotations

import re

import pytest
from boundaries import loaded_after
from synth_support import REPO_ROOT

from triton_mme.catalog import CatalogError, load_catalog, parse_catalog
from triton_mme.core.platform import PLATFORM
from triton_mme.sizing.build_memory import (
    BUILD_PEAK_BASE_GIB,
    BUILD_PEAK_BYTES_PER_PARAMETER,
    TORCHVISION_PARAMETERS,
    estimated_build_peak_gib,
    hf_parameters,
)
from triton_mme_cdk.settings import Settings, SettingsError
from triton_mme_cdk.settings.build_target import build_memory_problem, check_build_target


def catalog_with(**entry: object) -> object:
    raw = {"name": "big", "weights": "random", "formats": ["onnx"], "max_batch_size": 8, **entry}
    return parse_catalog({"models": [raw]})


def fits(parameters: int, compute_type: str = "SMALL") -> bool:
    return BUILD_PEAK_BASE_GIB + parameters * BUILD_PEAK_BYTES_PER_PARAMETER / 2**30 <= (
        PLATFORM.codebuild_gpus[compute_type].memory_gib
    )


def test_the_default_catalog_fits_the_small_runner() -> None:
    catalog = load_catalog(REPO_ROOT / "models.yaml")
    assert build_memory_problem(catalog, builder_compute_type="SMALL") is None
    peaks = {entry.name: estimated_build_peak_gib(entry) for entry in catalog.models}
    assert peaks["resnet50"] < peaks["roberta-large"] <= PLATFORM.codebuild_gpus["SMALL"].memory_gib


# A RoBERTa twice as wide as RoBERTa-large: about 1.3 billion parameters.
WIDE = {"model_type": "roberta", "hidden_size": 2048, "num_hidden_layers": 24, "intermediate_size": 8192,
        "num_attention_heads": 16, "vocab_size": 50265, "max_position_embeddings": 514,
        "type_vocab_size": 1}  # fmt: skip


def test_a_model_too_large_for_the_runner_is_refused_in_one_line_naming_it_and_the_figures() -> None:
    parameters = hf_parameters(WIDE)
    assert parameters is not None and not fits(parameters) and fits(parameters, "LARGE")
    catalog = catalog_with(source="huggingface:example/roberta-wide", hf_config=WIDE)
    with pytest.raises(SettingsError) as caught:
        check_build_target(Settings(), catalog)  # type: ignore[arg-type]
    message = str(caught.value)
    peak = BUILD_PEAK_BASE_GIB + parameters * BUILD_PEAK_BYTES_PER_PARAMETER / 2**30
    assert message.startswith(
        f"model 'big' needs about {peak:.1f} GiB to build ({parameters / 1e6:,.0f} M parameters x "
        f"{BUILD_PEAK_BYTES_PER_PARAMETER:g} bytes + {BUILD_PEAK_BASE_GIB:g} GiB), more than the 16 GiB of "
        "builderComputeType=SMALL; allowed: models up to about "
    )
    assert message.endswith(
        "M parameters there, builderComputeType=LARGE (255 GiB), or build it elsewhere and publish it with "
        "triton-mme upload"
    )
    assert "\n" not in message
    # The largest size the message allows does fit, and a little more does not.
    (largest,) = re.findall(r"up to about ([\d,]+) M parameters", message)
    millions = int(largest.replace(",", ""))
    assert fits(millions * 10**6) and not fits((millions + 5) * 10**6)


def test_every_torchvision_architecture_fits_the_small_runner() -> None:
    assert all(fits(parameters) for parameters in TORCHVISION_PARAMETERS.values())


def test_a_hugging_face_model_is_counted_from_its_config() -> None:
    small = {"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128,
             "num_attention_heads": 2}  # fmt: skip
    source = "huggingface:example/encoder"
    assert (
        build_memory_problem(catalog_with(source=source, hf_config=small), builder_compute_type="SMALL")
        is None
    )
    problem = build_memory_problem(catalog_with(source=source, hf_config=WIDE), builder_compute_type="SMALL")
    assert problem is not None and problem.startswith("model 'big' needs about ")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"source": "huggingface:example/decoder", "hf_config": {"model_type": "gpt2"}},
            "model 'big': model_type 'gpt2' has no parameter count before the build, so its build memory "
            "cannot be checked; allowed: bert, roberta, xlm-roberta, camembert, distilbert",
        ),
        (
            {"source": "huggingface:example/unknown", "weights": "pretrained"},
            "model 'big': hf_config: no shipped config 'unknown'; allowed a mapping of config fields or one "
            "of: roberta-base, roberta-large (a pretrained model's architecture must be known before the "
            "build to check its memory)",
        ),
        (
            {"source": "torchvision:resnet5000"},
            "model 'big': source: torchvision has no model 'resnet5000'; allowed e.g. resnet50,",
        ),
    ],
)
def test_a_model_whose_size_cannot_be_known_before_the_build_is_refused(
    entry: dict[str, object], message: str
) -> None:
    with pytest.raises(CatalogError) as caught:
        build_memory_problem(catalog_with(**entry), builder_compute_type="SMALL")  # type: ignore[arg-type]
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_the_estimate_imports_no_deep_learning_library() -> None:
    loaded = loaded_after(
        "from triton_mme_cdk.settings.build_target import build_memory_problem\n"
        "from triton_mme.catalog import load_catalog\n"
        "build_memory_problem(load_catalog('models.yaml'), builder_compute_type='SMALL')"
    )
    assert loaded.isdisjoint({"torch", "torchvision", "transformers", "onnx", "onnxruntime"})

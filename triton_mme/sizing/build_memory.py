"""How much memory a catalog entry's build needs, known before the build: without PyTorch or the network.

The estimate is BUILD_PEAK_BASE_GIB plus the entry's parameters times BUILD_PEAK_BYTES_PER_PARAMETER, both
measured with the benchmark suite (`python -m benchmarks --only build`, docs/benchmarks.md).
Parameter counts:

Torchvision architectures: a recorded table. Hugging Face encoders: counted from the architecture's
config (the catalog's `hf_config`, or a config shipped in hf_configs), for the model types whose layout
is written out below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triton_mme.catalog import CatalogError, ModelEntry
from triton_mme.catalog.checkpoints import CHECKPOINT_KIND
from triton_mme.core.errors import quoted
from triton_mme.core.formats import Weights
from triton_mme.sizing.hf_config import resolve_hf_config

# Measured with `python -m benchmarks --only build` on the default catalog (2-core workstation, random
# weights, no TensorRT; the build's line per archive gives the build process's peak over its steps): ResNet-50
# (25.6 M parameters) peaked at 2.20 GiB, RoBERTa-large (355.4 M) at 7.55 GiB; the whole process tree at
# 7.51 GiB (benchmarks/results/build/2026-12-01-amd-epyc-2c.md). The line through both is 1.79 GiB + 17.4
# bytes per parameter, rounded up here. A GPU runner adds CUDA's own host memory for TensorRT formats; see
# docs/deploy.md.
BUILD_PEAK_BASE_GIB = 2.0
BUILD_PEAK_BYTES_PER_PARAMETER = 17.5
# torchvision 0.29.1 (requirements-torch.txt): `weights.meta["num_params"]` of every model in
# `torchvision.models.list_models()`, the largest over the model's weights (a ViT's position embeddings
# grow with the image size of some weights). tests/sizing/test_build_parameters.py checks the table
# against the installed torchvision.
TORCHVISION_PARAMETERS: dict[str, int] = {
    "alexnet": 61100840,
    "convnext_base": 88591464,
    "convnext_large": 197767336,
    "convnext_small": 50223688,
    "convnext_tiny": 28589128,
    "deeplabv3_mobilenet_v3_large": 11029328,
    "deeplabv3_resnet101": 60996202,
    "deeplabv3_resnet50": 42004074,
    "densenet121": 7978856,
    "densenet161": 28681000,
    "densenet169": 14149480,
    "densenet201": 20013928,
    "efficientnet_b0": 5288548,
    "efficientnet_b1": 7794184,
    "efficientnet_b2": 9109994,
    "efficientnet_b3": 12233232,
    "efficientnet_b4": 19341616,
    "efficientnet_b5": 30389784,
    "efficientnet_b6": 43040704,
    "efficientnet_b7": 66347960,
    "efficientnet_v2_l": 118515272,
    "efficientnet_v2_m": 54139356,
    "efficientnet_v2_s": 21458488,
    "fasterrcnn_mobilenet_v3_large_320_fpn": 19386354,
    "fasterrcnn_mobilenet_v3_large_fpn": 19386354,
    "fasterrcnn_resnet50_fpn": 41755286,
    "fasterrcnn_resnet50_fpn_v2": 43712278,
    "fcn_resnet101": 54314346,
    "fcn_resnet50": 35322218,
    "fcos_resnet50_fpn": 32269600,
    "googlenet": 6624904,
    "inception_v3": 27161264,
    "keypointrcnn_resnet50_fpn": 59137258,
    "lraspp_mobilenet_v3_large": 3221538,
    "maskrcnn_resnet50_fpn": 44401393,
    "maskrcnn_resnet50_fpn_v2": 46359409,
    "maxvit_t": 30919624,
    "mc3_18": 11695440,
    "mnasnet0_5": 2218512,
    "mnasnet0_75": 3170208,
    "mnasnet1_0": 4383312,
    "mnasnet1_3": 6282256,
    "mobilenet_v2": 3504872,
    "mobilenet_v3_large": 5483032,
    "mobilenet_v3_small": 2542856,
    "mvit_v1_b": 36610672,
    "mvit_v2_s": 34537744,
    "quantized_googlenet": 6624904,
    "quantized_inception_v3": 27161264,
    "quantized_mobilenet_v2": 3504872,
    "quantized_mobilenet_v3_large": 5483032,
    "quantized_resnet18": 11689512,
    "quantized_resnet50": 25557032,
    "quantized_resnext101_32x8d": 88791336,
    "quantized_resnext101_64x4d": 83455272,
    "quantized_shufflenet_v2_x0_5": 1366792,
    "quantized_shufflenet_v2_x1_0": 2278604,
    "quantized_shufflenet_v2_x1_5": 3503624,
    "quantized_shufflenet_v2_x2_0": 7393996,
    "r2plus1d_18": 31505325,
    "r3d_18": 33371472,
    "raft_large": 5257536,
    "raft_small": 990162,
    "regnet_x_16gf": 54278536,
    "regnet_x_1_6gf": 9190136,
    "regnet_x_32gf": 107811560,
    "regnet_x_3_2gf": 15296552,
    "regnet_x_400mf": 5495976,
    "regnet_x_800mf": 7259656,
    "regnet_x_8gf": 39572648,
    "regnet_y_128gf": 644812894,
    "regnet_y_16gf": 83590140,
    "regnet_y_1_6gf": 11202430,
    "regnet_y_32gf": 145046770,
    "regnet_y_3_2gf": 19436338,
    "regnet_y_400mf": 4344144,
    "regnet_y_800mf": 6432512,
    "regnet_y_8gf": 39381472,
    "resnet101": 44549160,
    "resnet152": 60192808,
    "resnet18": 11689512,
    "resnet34": 21797672,
    "resnet50": 25557032,
    "resnext101_32x8d": 88791336,
    "resnext101_64x4d": 83455272,
    "resnext50_32x4d": 25028904,
    "retinanet_resnet50_fpn": 34014999,
    "retinanet_resnet50_fpn_v2": 38198935,
    "s3d": 8320048,
    "shufflenet_v2_x0_5": 1366792,
    "shufflenet_v2_x1_0": 2278604,
    "shufflenet_v2_x1_5": 3503624,
    "shufflenet_v2_x2_0": 7393996,
    "squeezenet1_0": 1248424,
    "squeezenet1_1": 1235496,
    "ssd300_vgg16": 35641826,
    "ssdlite320_mobilenet_v3_large": 3440060,
    "swin3d_b": 88048984,
    "swin3d_s": 49816678,
    "swin3d_t": 28158070,
    "swin_b": 87768224,
    "swin_s": 49606258,
    "swin_t": 28288354,
    "swin_v2_b": 87930848,
    "swin_v2_s": 49737442,
    "swin_v2_t": 28351570,
    "vgg11": 132863336,
    "vgg11_bn": 132868840,
    "vgg13": 133047848,
    "vgg13_bn": 133053736,
    "vgg16": 138357544,
    "vgg16_bn": 138365992,
    "vgg19": 143667240,
    "vgg19_bn": 143678248,
    "vit_b_16": 86859496,
    "vit_b_32": 88224232,
    "vit_h_14": 633470440,
    "vit_l_16": 305174504,
    "vit_l_32": 306535400,
    "wide_resnet101_2": 126886696,
    "wide_resnet50_2": 68883240,
}
# BertModel's layout, shared by RoBERTa, XLM-RoBERTa and CamemBERT (transformers' modeling_bert and the
# modeling files that copy it): embeddings, encoder layers, pooler (AutoModel keeps the pooler).
BERT_LIKE_TYPES = ("bert", "roberta", "xlm-roberta", "camembert")
HF_COUNTED_TYPES = (*BERT_LIKE_TYPES, "distilbert")


def _encoder_layer(hidden: int, intermediate: int) -> int:
    attention = 4 * (hidden * hidden + hidden)  # query, key, value, output projections
    feed_forward = hidden * intermediate + intermediate + intermediate * hidden + hidden
    return attention + feed_forward + 2 * 2 * hidden  # two LayerNorms


def hf_parameters(config: Mapping[str, Any]) -> int | None:
    """Parameters of AutoModel for this config (None for a model type not written out here)."""
    model_type = config.get("model_type")
    if model_type in BERT_LIKE_TYPES:
        hidden = config.get("hidden_size", 768)
        embeddings = hidden * (
            config.get("vocab_size", 30522)
            + config.get("max_position_embeddings", 512)
            + config.get("type_vocab_size", 2)
            + 2  # LayerNorm
        )
        layers = config.get("num_hidden_layers", 12) * _encoder_layer(
            hidden, config.get("intermediate_size", 3072)
        )
        return embeddings + layers + hidden * hidden + hidden
    if model_type == "distilbert":
        hidden = config.get("dim", 768)
        embeddings = hidden * (
            config.get("vocab_size", 30522) + config.get("max_position_embeddings", 512) + 2
        )
        return embeddings + config.get("n_layers", 6) * _encoder_layer(hidden, config.get("hidden_dim", 3072))
    return None


def parameter_count(entry: ModelEntry) -> int:
    """The entry's parameters; CatalogError (one line) when they cannot be known before the build."""
    if entry.source_kind == CHECKPOINT_KIND:
        # Counted from the checkpoint's safetensors headers (buffers included) when it was resolved or locked.
        if entry.pin is None:
            raise CatalogError(
                f"model {quoted(entry.name)}: its checkpoint's parameters are not known before the build; "
                "run `triton-mme lock` (models.lock.yaml records them)"
            )
        return entry.pin.parameters
    if entry.source_kind == "torchvision":
        if entry.source_id not in TORCHVISION_PARAMETERS:
            raise CatalogError(
                f"model {quoted(entry.name)}: source: torchvision has no model {quoted(entry.source_id)}; "
                f"allowed e.g. resnet50, mobilenet_v3_small, squeezenet1_1"
            )
        return TORCHVISION_PARAMETERS[entry.source_id]
    try:
        config = resolve_hf_config(entry)
    except CatalogError as error:
        if entry.weights is Weights.RANDOM:
            raise
        raise CatalogError(
            f"{error}".replace(" for weights: random", "").rstrip()
            + " (a pretrained model's architecture must be known before the build to check its memory)"
        ) from None
    counted = hf_parameters(config)
    if counted is None:
        raise CatalogError(
            f"model {quoted(entry.name)}: model_type {quoted(str(config['model_type']))} has no parameter "
            f"count before the build, so its build memory cannot be checked; allowed: "
            f"{', '.join(HF_COUNTED_TYPES)}"
        )
    return counted


def estimated_build_peak_gib(entry: ModelEntry) -> float:
    """The build's peak resident memory for this entry (the whole process tree), in GiB."""
    return BUILD_PEAK_BASE_GIB + parameter_count(entry) * BUILD_PEAK_BYTES_PER_PARAMETER / 2**30

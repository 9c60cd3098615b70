"""One model of every torchvision family and every text type builds in all CPU formats and passes `verify`.

The defences (the TorchScript code walk and operator allowlist, the ONNX wire-format walk) must accept what
the project's own exporters write for every architecture the catalog accepts; the default catalog covers
only three. Each family's smallest model, random weights, the smallest input it accepts. All 80 torchvision
classifiers are covered by `python -m benchmarks.torchscript_coverage` (benchmarks/results/).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from build_support import catalog_of, tiny_cnn, tiny_roberta

from benchmarks.torchscript_coverage import tiny_text_config
from triton_mme.model_build.checkpoint_sources import HF_CHECKPOINT_TYPES
from triton_mme.model_build.pipeline import build_catalog
from triton_mme.model_build.verify import verify_archive

# torchvision module -> (its smallest classifier, the smallest square input it accepts, within reason).
FAMILIES = {
    "alexnet": ("alexnet", 64),
    "convnext": ("convnext_tiny", 32),
    "densenet": ("densenet121", 32),
    "efficientnet": ("efficientnet_b0", 32),
    "googlenet": ("googlenet", 32),
    "inception": ("inception_v3", 80),
    "maxvit": ("maxvit_t", 224),
    "mnasnet": ("mnasnet0_5", 32),
    "mobilenetv2": ("mobilenet_v2", 32),
    "mobilenetv3": ("mobilenet_v3_small", 32),
    "regnet": ("regnet_y_400mf", 32),
    "resnet": ("resnet18", 32),
    "shufflenetv2": ("shufflenet_v2_x0_5", 32),
    "squeezenet": ("squeezenet1_1", 32),
    "swin_transformer": ("swin_t", 32),
    "vgg": ("vgg11", 32),
    "vision_transformer": ("vit_b_32", 224),
}


def _built_and_verified(entry: dict[str, object], out: Path) -> None:
    manifest = build_catalog(catalog_of(entry), out, progress=False)
    assert sorted(record.format for record in manifest.archives) == ["onnx", "torchscript"]
    for record in manifest.archives:
        report = verify_archive(out / record.target_model)
        runtime = "onnxruntime" if record.format == "onnx" else "torchscript"
        assert report.checks[-2:] == [f"{runtime} run at batch 1", f"{runtime} run at batch 2"]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "size"), FAMILIES.values(), ids=FAMILIES.keys())
def test_every_torchvision_family_builds_and_verifies(model: str, size: int, tmp_path: Path) -> None:
    entry = tiny_cnn(
        name="family", source=f"torchvision:{model}", max_batch_size=2, input_shape=[3, size, size]
    )
    _built_and_verified(entry, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("model_type", HF_CHECKPOINT_TYPES)
def test_every_text_type_builds_and_verifies(model_type: str, tmp_path: Path) -> None:
    entry = tiny_roberta(name="text", max_batch_size=2, hf_config=tiny_text_config(model_type))
    _built_and_verified(entry, tmp_path)

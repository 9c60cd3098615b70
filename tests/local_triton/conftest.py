"""Fixtures of the local Triton tests: one build directory of tiny archives per session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from tiny_archives import FEATURES, BuiltArchive, TinyNet, pack, tiny_config


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, BuiltArchive]]:
    """A build directory with onnx, torchscript and tensorrt archives of one tiny random model."""
    out = tmp_path_factory.mktemp("models")
    work = tmp_path_factory.mktemp("export")
    torch.manual_seed(0)
    net = TinyNet().eval()
    example = torch.randn(2, FEATURES)
    torch.onnx.export(
        net,
        (example,),
        work / "model.onnx",
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        dynamo=False,
    )
    torch.jit.trace(net, example).save(str(work / "model.pt"))
    (work / "model.plan").write_bytes(b"a plan needs the GPU that built it")
    archives = {
        "onnx": BuiltArchive(
            "tiny-onnx-00000000000000a1.tar.gz", "onnx", "input", "logits", work / "model.onnx"
        ),
        "torchscript": BuiltArchive(
            "tiny-torchscript-00000000000000b2.tar.gz",
            "torchscript",
            "INPUT__0",
            "OUTPUT__0",
            work / "model.pt",
        ),
        "tensorrt": BuiltArchive(
            "tiny-tensorrt-00000000000000c3.tar.gz", "tensorrt", "input", "logits", work / "model.plan"
        ),
    }
    platforms = {"onnx": "onnxruntime_onnx", "torchscript": "pytorch_libtorch", "tensorrt": "tensorrt_plan"}
    for key, archive in archives.items():
        file_name = archive.model_file.name
        config = tiny_config(
            f"tiny-{key}", platforms[key], file_name, archive.input_name, archive.output_name
        )
        pack(out, archive.target_model, config, archive.model_file, file_name)
    # The same model under a second TargetModel: the platform caches by name, so it is a third model.
    archives["onnx-copy"] = BuiltArchive(
        "tiny-onnx-00000000000000d4.tar.gz", "onnx", "input", "logits", work / "model.onnx"
    )
    shutil.copyfile(out / archives["onnx"].target_model, out / archives["onnx-copy"].target_model)
    return out, archives

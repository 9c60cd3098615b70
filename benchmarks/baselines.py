"""The plain approach of the SageMaker example notebooks, built here so both sides run in one process.

A notebook exports with `torch.onnx.export(..., opset_version=11)` (the TorchScript-based exporter),
writes a minimal config.pbtxt (platform, max_batch_size, inputs, outputs, a GPU instance group; no
ONNX Runtime settings, no warm-up) and packs `<name>/config.pbtxt` + `<name>/1/model.onnx` with
`tar -czf` (gzip level 6). Triton then creates the session with ONNX Runtime's defaults.
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.core.manifest import TensorSpec
from triton_mme.core.triton_config import triton_type

NOTEBOOK_OPSET = 11


def export_onnx(
    module: Any,
    example_inputs: tuple[Any, ...],
    path: Path,
    *,
    input_names: list[str],
    output_names: list[str],
) -> Path:
    """torch.onnx.export as the notebooks call it: opset 11, legacy exporter, dynamic batch axis."""
    import torch

    batch_axes = {name: {0: "batch_size"} for name in [*input_names, *output_names]}
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(
            module,
            example_inputs,
            str(path),
            export_params=True,
            opset_version=NOTEBOOK_OPSET,
            do_constant_folding=True,
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=batch_axes,
            dynamo=False,
        )
    return path


def notebook_config(
    name: str, *, max_batch_size: int, inputs: list[TensorSpec], outputs: list[TensorSpec]
) -> str:
    config = pb.ModelConfig(name=name, platform="onnxruntime_onnx", max_batch_size=max_batch_size)
    for spec in inputs:
        config.input.add(name=spec.name, data_type=triton_type(spec.datatype), dims=list(spec.dims))
    for spec in outputs:
        config.output.add(name=spec.name, data_type=triton_type(spec.datatype), dims=list(spec.dims))
    config.instance_group.add(kind=pb.ModelInstanceGroup.KIND_GPU)
    return str(text_format.MessageToString(config))


def pack_archive(onnx_path: Path, config_text: str, archive: Path, *, name: str) -> Path:
    """`tar -czf model.tar.gz <name>` over `<name>/config.pbtxt` and `<name>/1/model.onnx` (`<name>` is
    `<model>-onnx`, the one directory name the archive policy lets an ONNX archive have)."""
    import gzip

    archive.parent.mkdir(parents=True, exist_ok=True)
    staging = archive.parent / f"{name}-staging"
    (staging / name / "1").mkdir(parents=True, exist_ok=True)
    (staging / name / "config.pbtxt").write_text(config_text, encoding="utf-8")
    (staging / name / "1" / "model.onnx").write_bytes(onnx_path.read_bytes())
    with (
        gzip.open(archive, "wb", compresslevel=6) as zipped,
        tarfile.open(fileobj=zipped, mode="w") as tar,
    ):
        tar.add(staging / name, arcname=name)
    return archive

"""The baseline of benchmarks.build_workers: what a notebook does to serve its fine-tunes from a Triton
multi-model endpoint, and no more. Per state dict: load it into the architecture, export ONNX with the
project's exporter settings (TorchScript-based, opset 20, a dynamic batch axis), write config.pbtxt, pack
`<name>.tar.gz`. No pinning or private copy, no reference outputs, no parity check, no read-back of the
archive, no golden data, no cache: the extra work the project's build does is what the comparison shows.

    .venv/bin/python -m benchmarks.plain_build --out DIR CHECKPOINT.safetensors...
"""

from __future__ import annotations

import argparse
import tarfile
from pathlib import Path

ARCHITECTURE = "squeezenet1_1"
CLASSES = 10
INPUT_SHAPE = (3, 32, 32)
MAX_BATCH_SIZE = 2
OPSET = 20  # triton_mme.model_build.exporters.onnx.OPSET
CONFIG = """name: "{name}"
backend: "onnxruntime"
max_batch_size: {max_batch_size}
input [ {{ name: "input" data_type: TYPE_FP32 dims: [ {dims} ] }} ]
output [ {{ name: "output" data_type: TYPE_FP32 dims: [ {classes} ] }} ]
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.plain_build", description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("checkpoints", type=Path, nargs="+")
    args = parser.parse_args(argv)

    import torch
    import torchvision
    from safetensors.torch import load_file

    for checkpoint in args.checkpoints:
        name = checkpoint.stem
        model = torchvision.models.get_model(ARCHITECTURE, weights=None, num_classes=CLASSES)
        model.load_state_dict(load_file(checkpoint))
        model.eval()
        folder = args.out / name
        (folder / "1").mkdir(parents=True)
        torch.onnx.export(
            model,
            (torch.zeros(MAX_BATCH_SIZE, *INPUT_SHAPE),),
            str(folder / "1" / "model.onnx"),
            dynamo=False,
            opset_version=OPSET,
            input_names=["input"],
            output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
        )
        dims = ", ".join(map(str, INPUT_SHAPE))
        config = CONFIG.format(name=name, max_batch_size=MAX_BATCH_SIZE, dims=dims, classes=CLASSES)
        (folder / "config.pbtxt").write_text(config, encoding="utf-8")
        with tarfile.open(args.out / f"{name}.tar.gz", "w:gz") as archive:
            archive.add(folder, arcname=name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

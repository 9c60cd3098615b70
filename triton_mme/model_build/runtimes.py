"""Run an exported model file on numpy inputs: ONNX Runtime, TorchScript, TensorRT.

The deep-learning libraries are imported inside the functions so that importing this module (and
triton_mme.archive_inspection) stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from triton_mme.archive_inspection import scan_torchscript_code

ORT_TYPES = {
    "tensor(float)": "FP32",
    "tensor(float16)": "FP16",
    "tensor(double)": "FP64",
    "tensor(int64)": "INT64",
    "tensor(int32)": "INT32",
    "tensor(int8)": "INT8",
    "tensor(uint8)": "UINT8",
    "tensor(bool)": "BOOL",
}


def onnx_session(model_path: Path, *, device: str = "cpu") -> Any:
    import onnxruntime as ort

    providers = ["CPUExecutionProvider"]
    if device == "cuda":
        providers.insert(0, "CUDAExecutionProvider")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(model_path), sess_options=options, providers=providers)


def run_onnx(session: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, dict(feeds)), strict=True))


def load_torchscript_functions(model_path: Path, *, device: str = "cpu") -> tuple[Any, list[Any]]:
    """Load a TorchScript file, after its code passed the code check (archive_inspection), as
    torch.jit.load does (torch/jit/_serialization.py: its own CompilationUnit, then the module wrapped);
    returns the module and every function and class method the archive compiled, for the graph check."""
    import warnings

    import torch
    from torch.jit._recursive import wrap_cpp_module

    # No torch.jit.load of an unchecked file: the code check reads the zip and runs nothing.
    scan_torchscript_code(model_path.name, model_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # TorchScript is what Triton's PyTorch backend serves
        unit = torch._C.CompilationUnit()
        # The arguments torch.jit.load passes (its stub omits _restore_shapes); get_functions' stub says None.
        imported = torch._C.import_ir_module(  # type: ignore[call-arg]
            unit, str(model_path), torch.device(device), {}, False
        )
        functions: list[Any] = list(unit.get_functions())  # type: ignore[func-returns-value]
        return wrap_cpp_module(imported).eval(), functions


def load_torchscript(model_path: Path, *, device: str = "cpu") -> Any:
    """torch.jit.load of a file whose code passed the code check first."""
    return load_torchscript_functions(model_path, device=device)[0]


def run_torchscript(
    module: Any, feeds: Mapping[str, np.ndarray], input_order: list[str], output_names: list[str]
) -> dict[str, np.ndarray]:
    """TorchScript has positional tensors: INPUT__i in, OUTPUT__i out (Triton's naming)."""
    import torch

    device = next(iter(module.parameters())).device
    with torch.inference_mode():
        result = module(*(torch.from_numpy(feeds[name]).to(device) for name in input_order))
    tensors: tuple[Any, ...] = tuple(result) if isinstance(result, tuple | list) else (result,)
    if len(tensors) != len(output_names):
        raise ValueError(f"the model returns {len(tensors)} outputs, the config declares {len(output_names)}")
    return {name: tensor.detach().cpu().numpy() for name, tensor in zip(output_names, tensors, strict=True)}

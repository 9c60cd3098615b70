"""Inspect a model file before anything runs it: only what the build's exporters produce is allowed.

- TorchScript: the archive's serialized code must not define `__setstate__` (torch.jit.load runs it), and
  after loading, the graph of every method of every submodule (blocks included) may use only the operators
  the project's own exporters produce for the catalog's models (`TORCHSCRIPT_OPERATORS`; a file-mapping
  `aten::from_file`, a `aten::save` or any custom `torch.ops` namespace is refused by name).
- ONNX: every node, in every subgraph, must be in a standard domain ONNX Runtime implements itself, and no
  initializer may live in an external file (ONNX Runtime would open any path it names).

The checks run in the verification's child process (model_build.sandbox); the TorchScript code scan reads
the zip's text records and runs nothing, so it precedes torch.jit.load.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from triton_mme.core.archive import ArchiveError
from triton_mme.core.errors import printable, quoted

# Every operator kind in the TorchScript graphs the exporters produce (torch.jit.trace, then the debug
# records dropped) for the catalog's TorchScript models and the test catalog's: resnet50
# (torchvision:resnet50), tiny-cnn (torchvision:squeezenet1_1) and tiny-roberta (a RoBERTa encoder).
# Re-derive with `python -m triton_mme.model_build.inspection MODEL.pt...` after adding a model family.
TORCHSCRIPT_OPERATORS = frozenset(
    {
        "aten::Int",
        "aten::ScalarImplicit",
        "aten::__and__",
        "aten::_convolution",
        "aten::adaptive_avg_pool2d",
        "aten::add",
        "aten::add_",
        "aten::arange",
        "aten::batch_norm",
        "aten::cat",
        "aten::contiguous",
        "aten::cumsum",
        "aten::dropout",
        "aten::embedding",
        "aten::expand",
        "aten::flatten",
        "aten::gather",
        "aten::ge",
        "aten::gelu",
        "aten::index",
        "aten::layer_norm",
        "aten::linear",
        "aten::matmul",
        "aten::max_pool2d",
        "aten::mul",
        "aten::ne",
        "aten::new_ones",
        "aten::relu_",
        "aten::reshape",
        "aten::select",
        "aten::size",
        "aten::slice",
        "aten::softmax",
        "aten::tanh",
        "aten::to",
        "aten::transpose",
        "aten::type_as",
        "aten::unsqueeze",
        "aten::view",
        "aten::where",
        "aten::zeros",
        "prim::CallMethod",
        "prim::Constant",
        "prim::GetAttr",
        "prim::ListConstruct",
        "prim::NumToTensor",
        "prim::TupleConstruct",
        "prim::TupleUnpack",
    }
)
# ONNX Runtime's own operator sets: the default ONNX domain and its contrib ops (the transformer
# optimizer's fused Attention, SkipLayerNormalization, ...); any other domain needs a custom library.
ONNX_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "com.microsoft"})
_DOMAINS_SHOWN = ", ".join(repr(domain) for domain in sorted(ONNX_DOMAINS))
# torch.jit.load calls a module's __setstate__ while it unpickles it: code would run before any check.
_LOAD_TIME_CODE = b"def __setstate__"
MAX_TORCHSCRIPT_RECORDS = 100_000
MAX_CODE_RECORD_BYTES = 64 * 1024 * 1024


def scan_torchscript_code(where: str, model_file: Path) -> None:
    """Refuse a TorchScript archive whose serialized code runs at load time, without loading it."""
    try:
        with zipfile.ZipFile(model_file) as archive:
            records = archive.infolist()
            if len(records) > MAX_TORCHSCRIPT_RECORDS:
                raise ArchiveError(
                    f"{where}: model.pt has {len(records):,} records; allowed at most "
                    f"{MAX_TORCHSCRIPT_RECORDS:,}"
                )
            for record in records:
                if "/code/" not in record.filename or not record.filename.endswith(".py"):
                    continue
                if record.file_size > MAX_CODE_RECORD_BYTES:
                    raise ArchiveError(
                        f"{where}: model.pt code record {quoted(record.filename)} is "
                        f"{record.file_size:,} bytes; allowed at most {MAX_CODE_RECORD_BYTES:,}"
                    )
                if _LOAD_TIME_CODE in archive.read(record):
                    raise ArchiveError(
                        f"{where}: model.pt defines __setstate__ ({quoted(record.filename)}), which "
                        "torch.jit.load runs; the build's exporters never write one"
                    )
    except (zipfile.BadZipFile, OSError) as error:
        raise ArchiveError(f"{where}: model.pt is not a TorchScript archive ({error})") from None


def torchscript_operators(module: Any) -> set[str]:
    """Operator kinds of every method of every submodule, nested blocks included."""
    found: set[str] = set()

    def walk(block: Any) -> None:
        for node in block.nodes():
            found.add(node.kind())
            for inner in node.blocks():
                walk(inner)

    for _, submodule in module.named_modules():
        for method in submodule._c._method_names():
            walk(submodule._c._get_method(method).graph)
    return found


def check_torchscript_operators(where: str, module: Any) -> None:
    unknown = sorted(torchscript_operators(module) - TORCHSCRIPT_OPERATORS)
    if unknown:
        shown = ", ".join(map(printable, unknown[:5])) + (
            f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        )
        raise ArchiveError(
            f"{where}: model.pt uses operator {shown}, which the build's exporters never produce; allowed "
            "only the operators of the catalog's exported models (model_build/inspection.py)"
        )


def check_onnx_model(where: str, model_file: Path) -> None:
    """Standard domains only, in every graph and subgraph, and every tensor inside the file."""
    import onnx

    model = onnx.load(str(model_file), load_external_data=False)
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for tensor in graph.initializer:
            if tensor.data_location == onnx.TensorProto.EXTERNAL:
                raise ArchiveError(
                    f"{where}: model.onnx initializer {quoted(tensor.name)} is stored in an external file; "
                    "allowed only tensors inside model.onnx"
                )
        for node in graph.node:
            if node.domain not in ONNX_DOMAINS:
                operator = printable(node.op_type)
                raise ArchiveError(
                    f"{where}: model.onnx node {quoted(node.name)} uses operator {operator} of domain "
                    f"{quoted(node.domain)}; allowed domains: {_DOMAINS_SHOWN}"
                )
            for attribute in node.attribute:
                graphs += [attribute.g] if attribute.HasField("g") else []
                graphs += list(attribute.graphs)
    for opset in model.opset_import:
        if opset.domain not in ONNX_DOMAINS:
            raise ArchiveError(
                f"{where}: model.onnx imports operator set {quoted(opset.domain)}; allowed domains: "
                f"{_DOMAINS_SHOWN}"
            )


def main(argv: list[str] | None = None) -> int:
    """Print the operator kinds of TorchScript files (to re-derive TORCHSCRIPT_OPERATORS)."""
    import sys

    from triton_mme.model_build.runtimes import load_torchscript

    found: set[str] = set()
    for path in argv if argv is not None else sys.argv[1:]:
        found |= torchscript_operators(load_torchscript(Path(path)))
    print("\n".join(sorted(found)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Inspect a model file before and after loading it: only what the build's exporters produce is allowed.

Before anything loads the file, archive_inspection inspects it without running it (every entry point does:
`add`, `upload`, `serve-local`, `serving-check`): TorchScript code walked as a syntax tree, ONNX domains read
from the protobuf. Here, in the verification's child process (model_build.sandbox), the same files are checked
again with the libraries that run them:

- TorchScript: after loading, the graph of every method of every submodule and of every function and class
  method the archive compiled (blocks included) may use only the operators the project's own exporters
  produce for every architecture the catalog accepts (`TORCHSCRIPT_OPERATORS`; a file-mapping
  `aten::from_file`, a `aten::save` or any custom `torch.ops` namespace is refused by name).
- ONNX: every node, in every subgraph, must be in a standard domain ONNX Runtime implements itself, and no
  initializer may live in an external file (ONNX Runtime would open any path it names), read by `onnx`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from triton_mme.archive_inspection import (
    DOMAINS_SHOWN,
    ONNX_DOMAINS,
    TORCHSCRIPT_OPERATORS,
    ArchiveError,
    scan_torchscript_code,
)
from triton_mme.core.errors import printable, quoted

__all__ = [
    "ONNX_DOMAINS",
    "TORCHSCRIPT_OPERATORS",
    "check_onnx_model",
    "check_torchscript_operators",
    "scan_torchscript_code",
    "torchscript_operators",
]


def torchscript_operators(module: Any, functions: Iterable[Any] = ()) -> set[str]:
    """Operator kinds of every method of every submodule and of every compiled function given (the
    archive's class methods and free functions: runtimes.load_torchscript_functions), nested blocks
    included."""
    found: set[str] = set()

    def walk(block: Any) -> None:
        for node in block.nodes():
            found.add(node.kind())
            for inner in node.blocks():
                walk(inner)

    for _, submodule in module.named_modules():
        for method in submodule._c._method_names():
            walk(submodule._c._get_method(method).graph)
    for function in functions:
        walk(function.graph)
    return found


def check_torchscript_operators(where: str, module: Any, functions: Iterable[Any] = ()) -> None:
    unknown = sorted(torchscript_operators(module, functions) - TORCHSCRIPT_OPERATORS)
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
                    f"{quoted(node.domain)}; allowed domains: {DOMAINS_SHOWN}"
                )
            for attribute in node.attribute:
                graphs += [attribute.g] if attribute.HasField("g") else []
                graphs += list(attribute.graphs)
    for opset in model.opset_import:
        if opset.domain not in ONNX_DOMAINS:
            raise ArchiveError(
                f"{where}: model.onnx imports operator set {quoted(opset.domain)}; allowed domains: "
                f"{DOMAINS_SHOWN}"
            )


def main(argv: list[str] | None = None) -> int:
    """Print the operator kinds of TorchScript files (to re-derive TORCHSCRIPT_OPERATORS)."""
    import sys

    from triton_mme.model_build.runtimes import load_torchscript_functions

    found: set[str] = set()
    for path in argv if argv is not None else sys.argv[1:]:
        found |= torchscript_operators(*load_torchscript_functions(Path(path)))
    print("\n".join(sorted(found)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

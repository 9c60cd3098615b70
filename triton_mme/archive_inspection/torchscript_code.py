"""Read a TorchScript archive's code without loading it: every function and class method, as a syntax tree.

A TorchScript archive (`model.pt`, a zip) carries its program as text records, `<archive>/code/**.py`, in a
Python subset that torch.jit.load compiles; `data.pkl` and `constants.pkl` are pickles whose globals name
the classes of that code. Before anything loads the file this module:

- parses every code record with Python's `ast` and walks every statement of every class and function;
  every call must be an operator of `TORCHSCRIPT_OPERATORS` (the operators the build's exporters produce)
  or one of the few forms the TorchScript printer writes for them (`self.x`, `getattr(layer, "0")`,
  `(child).forward(...)`, `(child).forward1(...)` for a submodule called again in one forward,
  `int(...)`); a file-mapping `torch.from_file`, a `torch.save`, `ops.<custom>.x` or any other call is
  refused by name, wherever it hides (a submodule, a class method, a helper class);
- refuses `__setstate__` (torch.jit.load runs it while unpickling) and `__getstate__` under any spelling
  the parser accepts (extra spaces, a tab, a line break, a nested class), and any name that refers to them;
- accepts only the characters and tokens the printer writes (printable ASCII and line feeds, no comments,
  no backslashes, single-line plain string literals), so Python's parser and TorchScript's lexer cannot
  read the same text differently;
- refuses duplicate records (two parsers could pick different ones) and pickle globals other than the
  code's own classes and torch's tensor rebuilding (`torch.classes` custom classes included).

The build's sandbox also checks the loaded graphs (model_build.inspection): defence in depth.
"""

from __future__ import annotations

import ast
import io
import pickletools
import re
import tokenize
import zipfile
from pathlib import Path

from triton_mme.archive_inspection.archive import ArchiveError
from triton_mme.core.errors import quoted

# Every operator kind in the TorchScript graphs the exporter produces (torch.jit.trace, then the debug
# records dropped) for every architecture the catalog accepts: the 80 torchvision classifiers and each text
# type of sizing.checkpoint_sources.HF_CHECKPOINT_TYPES, encoder and sequence classifier. Derived and
# checked by `python -m benchmarks.torchscript_coverage` (benchmarks/results/torchscript-coverage.json: its
# `operators` is the union over all models); `python -m triton_mme.model_build.inspection MODEL.pt` prints
# one file's. Tensor arithmetic, shapes and the traced graph's own nodes only: no operator that reads or
# writes a file (aten::from_file, aten::save), no custom `torch.ops` namespace.
TORCHSCRIPT_OPERATORS = frozenset(
    {
        "aten::Bool",
        "aten::Float",
        "aten::Int",
        "aten::ScalarImplicit",
        "aten::__and__",
        "aten::__getitem__",
        "aten::__or__",
        "aten::_convolution",
        "aten::_native_multi_head_attention",
        "aten::abs",
        "aten::adaptive_avg_pool2d",
        "aten::add",
        "aten::add_",
        "aten::arange",
        "aten::avg_pool2d",
        "aten::baddbmm",
        "aten::batch_norm",
        "aten::bmm",
        "aten::cat",
        "aten::chunk",
        "aten::clamp",
        "aten::clamp_min",
        "aten::clone",
        "aten::constant_pad_nd",
        "aten::contiguous",
        "aten::copy_",
        "aten::cumsum",
        "aten::detach",
        "aten::dim",
        "aten::div",
        "aten::div_",
        "aten::dropout",
        "aten::dropout_",
        "aten::einsum",
        "aten::embedding",
        "aten::eq",
        "aten::erf",
        "aten::exp",
        "aten::expand",
        "aten::expand_as",
        "aten::feature_dropout",
        "aten::fill_",
        "aten::flatten",
        "aten::flip",
        "aten::floor_divide",
        "aten::floordiv",
        "aten::full",
        "aten::full_like",
        "aten::gather",
        "aten::ge",
        "aten::gelu",
        "aten::group_norm",
        "aten::gt",
        "aten::hardsigmoid",
        "aten::hardsigmoid_",
        "aten::hardswish",
        "aten::hardswish_",
        "aten::hardtanh",
        "aten::hardtanh_",
        "aten::index",
        "aten::instance_norm",
        "aten::layer_norm",
        "aten::linalg_vector_norm",
        "aten::linear",
        "aten::log",
        "aten::lt",
        "aten::masked_fill",
        "aten::masked_fill_",
        "aten::matmul",
        "aten::max",
        "aten::max_pool2d",
        "aten::max_pool2d_with_indices",
        "aten::mean",
        "aten::meshgrid",
        "aten::min",
        "aten::mul",
        "aten::mul_",
        "aten::narrow",
        "aten::ne",
        "aten::neg",
        "aten::new_ones",
        "aten::new_zeros",
        "aten::norm",
        "aten::numel",
        "aten::ones",
        "aten::ones_like",
        "aten::pad",
        "aten::permute",
        "aten::pow",
        "aten::relu",
        "aten::relu6",
        "aten::relu_",
        "aten::remainder",
        "aten::repeat",
        "aten::reshape",
        "aten::roll",
        "aten::rsqrt",
        "aten::rsub",
        "aten::scaled_dot_product_attention",
        "aten::select",
        "aten::sigmoid",
        "aten::sigmoid_",
        "aten::sign",
        "aten::silu",
        "aten::silu_",
        "aten::size",
        "aten::slice",
        "aten::softmax",
        "aten::softmax_",
        "aten::softplus",
        "aten::split",
        "aten::split_with_sizes",
        "aten::sqrt",
        "aten::squeeze",
        "aten::stack",
        "aten::sub",
        "aten::sub_",
        "aten::sum",
        "aten::swapaxes",
        "aten::tanh",
        "aten::tanh_",
        "aten::to",
        "aten::transpose",
        "aten::transpose_",
        "aten::type_as",
        "aten::unbind",
        "aten::unflatten",
        "aten::unsqueeze",
        "aten::upsample_bilinear2d",
        "aten::view",
        "aten::view_as",
        "aten::where",
        "aten::zero_",
        "aten::zeros",
        "aten::zeros_like",
        "prim::CallMethod",
        "prim::Constant",
        "prim::GetAttr",
        "prim::ListConstruct",
        "prim::ListUnpack",
        "prim::NumToTensor",
        "prim::TupleConstruct",
        "prim::TupleIndex",
        "prim::TupleUnpack",
        "prim::device",
        "prim::dtype",
    }
)
# How the TorchScript printer writes a builtin's call: `int(x)` is aten::Int.
_BUILTIN_CALLS = {"int": "aten::Int", "float": "aten::Float", "bool": "aten::Bool"}
# Called by torch.jit.load while it unpickles an object (any object whose class defines it).
LOAD_TIME_METHODS = frozenset({"__setstate__", "__getstate__"})
# Globals of data.pkl and constants.pkl besides the code's own classes (`__torch__.<module> <class>`).
PICKLE_GLOBALS = frozenset(
    {
        "collections OrderedDict",
        "torch._utils _rebuild_tensor_v2",
        "torch.jit._pickle restore_type_tag",
        *(f"torch.jit._pickle build_{kind}list" for kind in ("int", "double", "bool", "tensor")),
        *(f"torch {kind}Storage" for kind in ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Bool")),
    }
)
MAX_TORCHSCRIPT_RECORDS = 100_000
MAX_CODE_RECORD_BYTES = 64 * 1024 * 1024
# Printable ASCII and line feeds: what the TorchScript printer writes (no tabs, carriage returns, form feeds).
_PRINTED_TEXT = re.compile(rb"[\x20-\x7e\n]*")
_PLAIN_STRING = re.compile(r"""'[^'\n]*'|"[^"\n]*\"""")
_CUSTOM_CLASSES = "__torch__.torch.classes"
# A traced submodule's methods: `forward`, then `forward1`, `forward2`, ... for each further call of that
# submodule in one forward (torch.jit.trace gives each call its own method).
_FORWARD_METHOD = re.compile(r"forward(?:[1-9][0-9]*)?")
_OPERATOR_ROOTS = ("torch", "ops")


def _dotted(node: ast.expr) -> str | None:
    """`torch.ops.aten.add` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _operator_of(dotted: str) -> str | None:
    """The graph operator a call of `torch.x` / `ops.ns.x` / `torch.ops.ns.x` becomes."""
    parts = dotted.split(".")
    if parts[0] == "torch" and len(parts) == 2:
        return f"aten::{parts[1]}"
    if parts[:2] == ["torch", "ops"]:
        parts = parts[1:]
    if parts[0] == "ops" and len(parts) == 3:
        return f"{parts[1]}::{parts[2]}"
    return None


class _CodeCheck(ast.NodeVisitor):
    def __init__(self, where: str, record: str):
        self.where = where
        self.record = record

    def refuse(self, node: ast.AST, what: str) -> ArchiveError:
        line = getattr(node, "lineno", 0)
        return ArchiveError(
            f"{self.where}: model.pt code {quoted(self.record)} line {line}: {what}; allowed only the "
            "operators of the catalog's exported models (archive_inspection/torchscript_code.py)"
        )

    def generic_visit(self, node: ast.AST) -> None:
        for name in _names_in(node):
            if name in LOAD_TIME_METHODS:
                raise self.refuse(node, f"defines or names {name}, which torch.jit.load runs")
        super().generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for statement in node.body:
            if isinstance(statement, ast.ClassDef):
                raise self.refuse(statement, f"class {statement.name} nested in class {node.name}")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = _dotted(node)
        if dotted is not None and dotted.startswith(_CUSTOM_CLASSES):
            raise self.refuse(node, f"names the custom class {dotted}")
        if dotted is not None and dotted.split(".")[0] in _OPERATOR_ROOTS:
            raise self.refuse(node, f"refers to {dotted} outside a call")  # a call's callee is not visited
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        operator = self._operator(node)
        if operator is not None and operator not in TORCHSCRIPT_OPERATORS:
            raise self.refuse(node, f"uses operator {operator}, which the build's exporters never produce")
        for name in _names_in(node):
            if name in LOAD_TIME_METHODS:
                raise self.refuse(node, f"names {name}, which torch.jit.load runs")
        if isinstance(function, ast.Attribute) and _FORWARD_METHOD.fullmatch(function.attr):
            self.visit(function.value)
        for argument in [*node.args, *node.keywords]:
            self.visit(argument)

    def _operator(self, node: ast.Call) -> str | None:
        """The graph operator a call becomes; None for `annotate(<type>, value)`, which is no call."""
        function = node.func
        dotted = _dotted(function)
        if dotted == "torch.device":  # a constant of the graph: torch.device("cpu")
            if len(node.args) != 1 or node.keywords or not _is_text(node.args[0]):
                raise self.refuse(node, 'calls torch.device other than torch.device("<device>")')
            return "prim::Constant"
        if dotted is not None and dotted.split(".")[0] in _OPERATOR_ROOTS:
            operator = _operator_of(dotted)
            if operator is None:
                raise self.refuse(node, f"calls {dotted}")
            return operator
        if isinstance(function, ast.Name) and function.id in _BUILTIN_CALLS:
            return _BUILTIN_CALLS[function.id]
        if isinstance(function, ast.Name) and function.id == "annotate" and len(node.args) == 2:
            return None
        if isinstance(function, ast.Name) and function.id == "getattr":
            if not (
                len(node.args) == 2
                and not node.keywords
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id not in _OPERATOR_ROOTS
                and _is_text(node.args[1])
            ):
                raise self.refuse(node, 'calls getattr other than getattr(<module>, "<child>")')
            return "prim::GetAttr"
        if isinstance(function, ast.Attribute) and _FORWARD_METHOD.fullmatch(function.attr):
            return "prim::CallMethod"
        raise self.refuse(node, f"calls {ast.unparse(function)}")


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _names_in(node: ast.AST) -> list[str]:
    """The identifiers one node itself names (not its children's)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword):
        return [node.arg or ""]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value.strip()]
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    return []


def _check_tokens(where: str, record: str, text: bytes) -> None:
    def refuse(what: str) -> ArchiveError:
        return ArchiveError(
            f"{where}: model.pt code {quoted(record)} {what}; allowed only code as TorchScript prints it"
        )

    if not _PRINTED_TEXT.fullmatch(text):
        raise refuse("holds characters other than printable ASCII and line feeds")
    if b"\\" in text:
        raise refuse("holds a backslash")
    try:
        for token in tokenize.tokenize(io.BytesIO(text).readline):
            if token.type == tokenize.COMMENT:
                raise refuse(f"line {token.start[0]} holds a comment")
            if token.type == tokenize.STRING and not _PLAIN_STRING.fullmatch(token.string):
                raise refuse(f"line {token.start[0]} holds a string literal other than a plain one")
    except (tokenize.TokenError, SyntaxError) as error:
        raise refuse(f"is not valid code ({error})") from None


def check_code_record(where: str, record: str, text: bytes) -> None:
    """One code record: printed-code tokens only, every call an allowed operator, no load-time methods."""
    _check_tokens(where, record, text)
    try:
        tree = ast.parse(text.decode("ascii"), filename=record)
        _CodeCheck(where, record).visit(tree)
    except SyntaxError as error:
        raise ArchiveError(
            f"{where}: model.pt code {quoted(record)} is not valid code (line {error.lineno}: {error.msg}); "
            "allowed only code as TorchScript prints it"
        ) from None
    except (RecursionError, MemoryError):
        raise ArchiveError(
            f"{where}: model.pt code {quoted(record)} nests its expressions deeper than this check follows; "
            "allowed only code as TorchScript prints it"
        ) from None


def check_pickle_globals(where: str, record: str, data: bytes) -> None:
    """The classes a pickle of the archive names: the code's own classes and torch's tensor rebuilding."""
    try:
        for opcode, argument, _ in pickletools.genops(data):
            if opcode.name in ("STACK_GLOBAL", "INST", "REDUCE_EX"):
                raise ArchiveError(
                    f"{where}: model.pt {quoted(record)} uses pickle opcode {opcode.name}; allowed only "
                    "the pickles torch.jit.save writes"
                )
            if opcode.name != "GLOBAL":
                continue
            name = str(argument)
            module = name.split(" ")[0]
            if name in PICKLE_GLOBALS or (
                module.startswith("__torch__.") and not module.startswith(_CUSTOM_CLASSES)
            ):
                continue
            raise ArchiveError(
                f"{where}: model.pt {quoted(record)} names {quoted(name)}; allowed only the code's own "
                "classes and torch's tensor storage"
            )
    except ValueError as error:
        if isinstance(error, ArchiveError):
            raise
        raise ArchiveError(f"{where}: model.pt {quoted(record)} is not a pickle ({error})") from None


def _is_code(name: str) -> bool:
    return "/code/" in name and not name.endswith(".debug_pkl")


def scan_torchscript_code(where: str, model_file: Path) -> None:
    """Refuse a TorchScript archive whose code or pickles could do anything but the exporters' operators,
    without loading it (see the module's docstring)."""
    try:
        with zipfile.ZipFile(model_file) as archive:
            records = archive.infolist()
            if len(records) > MAX_TORCHSCRIPT_RECORDS:
                raise ArchiveError(
                    f"{where}: model.pt has {len(records):,} records; allowed at most "
                    f"{MAX_TORCHSCRIPT_RECORDS:,}"
                )
            seen: set[str] = set()
            for record in records:
                if record.filename in seen:
                    raise ArchiveError(
                        f"{where}: model.pt holds record {quoted(record.filename)} more than once; allowed "
                        "each once"
                    )
                seen.add(record.filename)
            for record in records:
                name = record.filename
                checked = _is_code(name) or name.endswith((".py", ".pkl"))
                if not checked:
                    continue
                if record.file_size > MAX_CODE_RECORD_BYTES:
                    raise ArchiveError(
                        f"{where}: model.pt record {quoted(name)} is {record.file_size:,} bytes; allowed at "
                        f"most {MAX_CODE_RECORD_BYTES:,}"
                    )
                data = archive.read(record)
                if name.endswith(".pkl"):
                    check_pickle_globals(where, name, data)
                elif _is_code(name) and not name.endswith(".py"):
                    raise ArchiveError(
                        f"{where}: model.pt record {quoted(name)} is under code/ but is not a .py record; "
                        "allowed only the code and debug records torch.jit.save writes"
                    )
                else:
                    check_code_record(where, name, data)
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise ArchiveError(f"{where}: model.pt is not a TorchScript archive ({error})") from None

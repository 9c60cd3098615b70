"""Check an ONNX file's operator domains and tensor locations by reading its protobuf wire format.

ONNX Runtime implements the default ONNX domain and its contrib ops itself; a node of any other domain
needs a custom operator library, and a tensor stored in an external file makes it open any path the
model names. Both are refused, in the main graph, every subgraph (`If`, `Loop`, `Scan` bodies), every
tensor attribute and every model-local function.

Archive inspection cannot use the `onnx` package (the serving check runner does not install it), so this
reads only the fields it needs from onnx.proto's wire format, skipping every other field by its length
without copying it: a 500 MB model is walked in its own memory map. The build's sandbox checks the same file
again with `onnx` itself (model_build.inspection).

The walk's time is bounded by the file's size and by a count: every field read consumes at least two bytes,
what protobuf forbids (field number 0 or above 2^29 - 1, group and reserved wire types, a varint past ten
bytes) is refused where it stands (a file of zeros at its first byte), and at most MAX_ONNX_FIELDS fields
are read in all (benchmarks/onnx_walk.py measures both a file of zeros and one of many tiny valid fields).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path

from triton_mme.archive_inspection.archive import ArchiveError
from triton_mme.core.errors import quoted

# ONNX Runtime's own operator sets: the default ONNX domain and its contrib ops (the transformer
# optimizer's fused Attention, SkipLayerNormalization, ...); any other domain needs a custom library.
ONNX_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "com.microsoft"})
DOMAINS_SHOWN = ", ".join(repr(domain) for domain in sorted(ONNX_DOMAINS))
# protobuf's own default recursion limit; the build's graphs nest two or three levels.
MAX_NESTING = 100
# Fields read (model, graphs, nodes, attributes, tensors; a skipped field counts once, whatever its size).
# Measured: squeezenet1_1 reads 1,522 and a two-layer RoBERTa 626 (about 300 a layer: RoBERTa-large's 24
# about 8,000). A million read in 2 to 5 s on two busy cores (benchmarks/onnx_walk.py), where 512 MiB of
# two-byte fields would be 268 million.
MAX_ONNX_FIELDS = 1_000_000
# protobuf's largest field number (2^29 - 1); 0 is not a field number either.
MAX_FIELD_NUMBER = (1 << 29) - 1

# Field numbers of onnx/onnx-ml.proto (ONNX 1.23), only those walked here.
_MODEL_OPSET_IMPORT, _MODEL_GRAPH, _MODEL_FUNCTIONS = 8, 7, 25
_OPSET_DOMAIN = 1
_FUNCTION_NODE, _FUNCTION_OPSET_IMPORT = 7, 9
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_SPARSE_INITIALIZER = 1, 5, 15
_NODE_NAME, _NODE_OP_TYPE, _NODE_DOMAIN, _NODE_ATTRIBUTE = 3, 4, 7, 5
_ATTRIBUTE_TENSOR, _ATTRIBUTE_GRAPH, _ATTRIBUTE_TENSORS, _ATTRIBUTE_GRAPHS = 5, 6, 10, 11
_ATTRIBUTE_SPARSE_TENSOR, _ATTRIBUTE_SPARSE_TENSORS = 22, 23
_SPARSE_VALUES, _SPARSE_INDICES = 1, 2
_TENSOR_NAME, _TENSOR_EXTERNAL_DATA, _TENSOR_DATA_LOCATION = 8, 13, 14
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


def _varint(data: memoryview, at: int, end: int) -> tuple[int, int]:
    value, shift = 0, 0
    while at < end and shift < 64:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7
    raise ValueError("truncated or overlong varint")


def _fields(data: memoryview, start: int, end: int, budget: list[int]) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value or start, end) of every field of one message; each field read takes
    one from `budget[0]`."""
    at = start
    while at < end:
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooManyFields
        begin, key = at, data[at]
        if key < 0x80:  # a one-byte key: field numbers 1 to 15, nearly every key onnx.proto writes
            at += 1
        else:
            key, at = _varint(data, at, end)
        number, wire = key >> 3, key & 7
        if number == 0 or number > MAX_FIELD_NUMBER:
            raise ValueError(f"field number {number} at byte {begin:,}, which protobuf forbids")
        if wire == _VARINT:
            value, at = _varint(data, at, end)
            yield number, wire, value, at
        elif wire == _LENGTH:
            length, at = _varint(data, at, end)
            if at + length > end:
                raise ValueError(f"field {number} at byte {at:,} runs past its message")
            yield number, wire, at, at + length
            at += length
        elif wire in (_FIXED64, _FIXED32):
            at += 8 if wire == _FIXED64 else 4
            if at > end:
                raise ValueError(f"field {number} at byte {at:,} runs past its message")
        else:  # 3 and 4 are protobuf's deprecated groups, which onnx.proto never uses; 6 and 7 do not exist
            raise ValueError(
                f"field {number} at byte {begin:,} has wire type {wire}, which onnx.proto never uses"
            )


class _TooManyFields(Exception):
    """More than MAX_ONNX_FIELDS fields read."""


def _text(data: memoryview, start: int, end: int) -> str:
    return bytes(data[start:end]).decode("utf-8", errors="replace")


class _Walk:
    def __init__(self, where: str, data: memoryview):
        self.where = where
        self.data = data
        self.budget = [MAX_ONNX_FIELDS]

    def fields(self, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        return _fields(self.data, start, end, self.budget)

    def model(self) -> None:
        for number, wire, start, end in self.fields(0, len(self.data)):
            if wire != _LENGTH:
                continue
            if number == _MODEL_GRAPH:
                self.graph(start, end, 1)
            elif number == _MODEL_OPSET_IMPORT:
                self.opset(start, end)
            elif number == _MODEL_FUNCTIONS:
                for inner, inner_wire, s, e in self.fields(start, end):
                    if inner_wire == _LENGTH and inner == _FUNCTION_NODE:
                        self.node(s, e, 2)
                    elif inner_wire == _LENGTH and inner == _FUNCTION_OPSET_IMPORT:
                        self.opset(s, e)

    def opset(self, start: int, end: int) -> None:
        for number, wire, s, e in self.fields(start, end):
            if number == _OPSET_DOMAIN and wire == _LENGTH and _text(self.data, s, e) not in ONNX_DOMAINS:
                raise ArchiveError(
                    f"{self.where}: model.onnx imports operator set {quoted(_text(self.data, s, e))}; "
                    f"allowed domains: {DOMAINS_SHOWN}"
                )

    def _deeper(self, depth: int) -> int:
        if depth >= MAX_NESTING:
            raise ArchiveError(
                f"{self.where}: model.onnx nests graphs more than {MAX_NESTING} deep; allowed at most "
                f"{MAX_NESTING}"
            )
        return depth + 1

    def graph(self, start: int, end: int, depth: int) -> None:
        depth = self._deeper(depth)
        for number, wire, s, e in self.fields(start, end):
            if wire != _LENGTH:
                continue
            if number == _GRAPH_NODE:
                self.node(s, e, depth)
            elif number == _GRAPH_INITIALIZER:
                self.tensor(s, e)
            elif number == _GRAPH_SPARSE_INITIALIZER:
                self.sparse_tensor(s, e)

    def node(self, start: int, end: int, depth: int) -> None:
        name = op_type = domain = ""
        attributes = []
        for number, wire, s, e in self.fields(start, end):
            if wire != _LENGTH:
                continue
            if number == _NODE_NAME:
                name = _text(self.data, s, e)
            elif number == _NODE_OP_TYPE:
                op_type = _text(self.data, s, e)
            elif number == _NODE_DOMAIN:
                domain = _text(self.data, s, e)  # the last one wins, as protobuf's parser has it
            elif number == _NODE_ATTRIBUTE:
                attributes.append((s, e))
        if domain not in ONNX_DOMAINS:
            raise ArchiveError(
                f"{self.where}: model.onnx node {quoted(name)} uses operator {quoted(op_type)} of domain "
                f"{quoted(domain)}; allowed domains: {DOMAINS_SHOWN}"
            )
        for s, e in attributes:
            self.attribute(s, e, depth)

    def attribute(self, start: int, end: int, depth: int) -> None:
        for number, wire, s, e in self.fields(start, end):
            if wire != _LENGTH:
                continue
            if number in (_ATTRIBUTE_GRAPH, _ATTRIBUTE_GRAPHS):
                self.graph(s, e, depth)
            elif number in (_ATTRIBUTE_TENSOR, _ATTRIBUTE_TENSORS):
                self.tensor(s, e)
            elif number in (_ATTRIBUTE_SPARSE_TENSOR, _ATTRIBUTE_SPARSE_TENSORS):
                self.sparse_tensor(s, e)

    def sparse_tensor(self, start: int, end: int) -> None:
        for number, wire, s, e in self.fields(start, end):
            if wire == _LENGTH and number in (_SPARSE_VALUES, _SPARSE_INDICES):
                self.tensor(s, e)

    def tensor(self, start: int, end: int) -> None:
        name, external = "", False
        for number, wire, value, e in self.fields(start, end):
            if number == _TENSOR_NAME and wire == _LENGTH:
                name = _text(self.data, value, e)
            elif number == _TENSOR_EXTERNAL_DATA or (
                number == _TENSOR_DATA_LOCATION and wire == _VARINT and value == _EXTERNAL
            ):
                external = True
        if external:
            raise ArchiveError(
                f"{self.where}: model.onnx tensor {quoted(name)} is stored in an external file; allowed only "
                "tensors inside model.onnx"
            )


def check_onnx_file(where: str, model_file: Path) -> int:
    """Standard domains only, in every graph, subgraph and function, and every tensor inside the file;
    returns the number of fields read."""
    try:
        with model_file.open("rb") as stream:
            if model_file.stat().st_size == 0:
                raise ArchiveError(f"{where}: model.onnx is empty; allowed an ONNX model")
            with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                data = memoryview(mapped)
                walk = _Walk(where, data)
                try:
                    walk.model()
                except _TooManyFields:
                    raise ArchiveError(
                        f"{where}: model.onnx has more than {MAX_ONNX_FIELDS:,} fields in its graphs, nodes "
                        f"and tensors; allowed at most {MAX_ONNX_FIELDS:,}"
                    ) from None
                except ValueError as error:
                    if isinstance(error, ArchiveError):
                        raise
                    raise ArchiveError(f"{where}: model.onnx is not an ONNX model ({error})") from None
                finally:
                    data.release()
                return MAX_ONNX_FIELDS - walk.budget[0]
    except OSError as error:
        raise ArchiveError(f"{where}: cannot read model.onnx ({error.strerror or error})") from None

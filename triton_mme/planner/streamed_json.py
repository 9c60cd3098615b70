"""A pydantic document written a part at a time, byte for byte as `model_dump_json(indent=2)` writes it whole.

A plan of 10,000 models holds a row per model per candidate (100,000) and 39 MB of text; built whole, the
rows and the text were most of `plan --json`'s memory. Here the document is its small head (the models with
their long lists left empty) plus the parts that stand in for those lists, each made only when it is
written: `Rows` a chunk of rows at a time, `Fields` a model whose named fields come from parts, `Items` a list
of parts. Everything else is dumped by pydantic itself (strict JSON: an infinite figure is null), so the
formatting is pydantic's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from triton_mme.core.files import atomic_writer

INDENT = 2


@dataclass(frozen=True)
class Rows:
    """A JSON array of rows, made and dumped one chunk at a time; `adapter` validates and dumps a chunk."""

    adapter: TypeAdapter[Any]
    chunks: Iterable[Iterable[Any]]


@dataclass(frozen=True)
class Fields:
    """`model` written field by field in its own order, the fields named in `parts` taken from them."""

    model: BaseModel
    parts: Mapping[str, Part]


@dataclass(frozen=True)
class Items:
    """A JSON array of parts, each made only when written."""

    parts: Iterable[Part]


Part = BaseModel | Fields | Items | Rows


def write_streamed(path: Path, document: Part) -> None:
    """Write the document to `path` whole or not at all, never holding more than one chunk of its rows."""
    with atomic_writer(path) as stream:
        for piece in _pieces(document, 0):
            stream.write(piece)
        stream.write(b"\n")


def _indented(text: bytes, depth: int) -> bytes:
    # pydantic's indented text has a newline only between values (JSON escapes one inside a string).
    return text.replace(b"\n", b"\n" + b" " * (INDENT * depth)) if depth else text


def _body(dumped: bytes, depth: int) -> bytes:
    """A dumped array's items (or object's fields) at `depth`, without its brackets and without the
    indentation of its first line."""
    return _indented(dumped[2 + INDENT : -2], depth)  # "[\n  " ... "\n]", or the same with braces


def _pieces(part: Part, depth: int) -> Iterator[bytes]:
    if isinstance(part, BaseModel):
        yield _indented(part.model_dump_json(indent=INDENT).encode(), depth)
    elif isinstance(part, Fields):
        yield from _object(part, depth)
    elif isinstance(part, Items):
        yield from _array((_pieces(item, depth + 1) for item in part.parts), depth)
    else:
        yield from _array(_row_chunks(part, depth), depth)


def _row_chunks(rows: Rows, depth: int) -> Iterator[Iterator[bytes]]:
    """Each non-empty chunk as one run of the array's items (pydantic separates them as the array does)."""
    for chunk in rows.chunks:
        valid = rows.adapter.validate_python(chunk)
        if valid:
            yield iter((_body(rows.adapter.dump_json(valid, indent=INDENT), depth),))


def _array(items: Iterator[Iterator[bytes]], depth: int) -> Iterator[bytes]:
    """`[`, the items one per line at depth + 1, `]`; `[]` when there are none, as pydantic writes it."""
    pad = b"\n" + b" " * (INDENT * (depth + 1))
    first = True
    for item in items:
        yield b"[" + pad if first else b"," + pad
        first = False
        yield from item
    yield b"[]" if first else b"\n" + b" " * (INDENT * depth) + b"]"


def _object(fields: Fields, depth: int) -> Iterator[bytes]:
    model, parts = fields.model, fields.parts
    names = list(type(model).model_fields)
    unknown = set(parts) - set(names)
    if unknown:
        raise ValueError(f"{type(model).__name__} has no field {', '.join(sorted(unknown))}")
    groups: list[str | list[str]] = []  # a field taken from a part, or a run of the model's own fields
    for name in names:
        if name in parts:
            groups.append(name)
        elif groups and isinstance(groups[-1], list):
            groups[-1].append(name)
        else:
            groups.append([name])
    if not groups:
        yield b"{}"
        return
    pad = b" " * (INDENT * (depth + 1))
    yield b"{\n"
    for index, group in enumerate(groups):
        if index:
            yield b",\n"
        if isinstance(group, list):
            # The model's own serializer for a run of its fields: one dump, in field order.
            yield pad + _body(model.model_dump_json(indent=INDENT, include=set(group)).encode(), depth)
        else:
            yield pad + json.dumps(group).encode() + b": "
            yield from _pieces(parts[group], depth + 1)
    yield b"\n" + b" " * (INDENT * depth) + b"}"

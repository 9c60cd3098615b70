"""Read JSON and YAML documents within bounds: size first, then nesting depth, then (YAML) no aliases.

Every document the project reads from a user, a file or the bucket (manifests, serving reports, load-test
reports, catalogs with their `hf_config` mappings, traffic files, labels) comes through here, so a
document nested ten thousand levels deep is one line instead of a RecursionError traceback, a YAML alias
bomb is refused before it expands, and a file is never read past its bound. The bounds live in
core.limits.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from triton_mme.core.errors import UserError
from triton_mme.core.limits import MAX_DOCUMENT_DEPTH

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


class DocumentError(UserError, ValueError):
    """A document past its bounds or unreadable; the message is one line naming it."""


def _as_bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def _error(where: str, message: str) -> DocumentError:
    return DocumentError(f"{where}: {message}" if where else message)


def check_size(where: str, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise _error(where, f"{size:,} bytes; allowed at most {max_bytes:,}")


def read_bytes(path: Path, *, max_bytes: int, where: str | None = None) -> bytes:
    """The file's bytes, refused before reading when it is larger than `max_bytes`."""
    where = where or str(path)
    try:
        with path.open("rb") as stream:
            data = stream.read(max_bytes + 1)
    except OSError as error:
        raise _error(where, f"cannot read it ({error.strerror or error})") from None
    check_size(where, len(data), max_bytes)
    return data


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects, counted outside strings, without parsing."""
    depth = deepest = 0
    for bracket in _BRACKET.finditer(_STRING.sub(b'""', data)):
        depth += 1 if bracket.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def load_json(data: str | bytes, *, where: str, max_bytes: int, max_depth: int = MAX_DOCUMENT_DEPTH) -> Any:
    raw = _as_bytes(data)
    check_size(where, len(raw), max_bytes)
    depth = json_depth(raw)
    if depth > max_depth:
        raise _error(where, f"nested {depth} levels deep; allowed at most {max_depth}")
    try:
        return json.loads(raw)
    except ValueError as error:
        raise _error(where, f"not JSON ({error})") from None


def read_json(path: Path, *, max_bytes: int, where: str | None = None) -> Any:
    """A JSON file, refused unread past `max_bytes` and unparsed past MAX_DOCUMENT_DEPTH."""
    where = where or str(path)
    return load_json(read_bytes(path, max_bytes=max_bytes, where=where), where=where, max_bytes=max_bytes)


class UniqueKeys:
    """A PyYAML loader mixin refusing a key given twice in one mapping, which PyYAML would let the last one
    win silently (two pins for one model, two settings for one entry). `duplicate_key` says how."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)  # type: ignore[attr-defined]
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
                try:
                    repeated = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key; the base loader says why
                    continue
                if repeated:
                    self.duplicate_key(key, key_node.start_mark)
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]

    def duplicate_key(self, key: Any, mark: Any) -> None:
        raise yaml.constructor.ConstructorError(
            None, None, f"key {key!r} appears twice in one mapping; allowed once", mark
        )


def duplicate_key_message(key: Any, mark: Any) -> str:
    return f"line {mark.line + 1}: key {key!r} appears twice in one mapping; allowed once (remove one)"


class _BoundedLoader(UniqueKeys, yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases (`*name`: an alias bomb expands exponentially), deep nesting
    (the composer recurses once per level) and a key given twice in one mapping."""

    where = ""
    max_depth = MAX_DOCUMENT_DEPTH
    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _error(
                self.where,
                f"line {event.start_mark.line + 1}: YAML alias *{event.anchor} is not allowed; write the "
                "value out",
            )
        self._depth += 1
        if self._depth > self.max_depth:
            raise _error(
                self.where, f"nested more than {self.max_depth} levels deep; allowed at most {self.max_depth}"
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def duplicate_key(self, key: Any, mark: Any) -> None:
        raise _error(self.where, duplicate_key_message(key, mark))


def load_yaml(data: str | bytes, *, where: str, max_bytes: int, max_depth: int = MAX_DOCUMENT_DEPTH) -> Any:
    raw = _as_bytes(data)
    check_size(where, len(raw), max_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _error(where, f"not UTF-8 text ({error.reason} at byte {error.start})") from None
    loader = _BoundedLoader(text)
    loader.where, loader.max_depth = where, max_depth
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()

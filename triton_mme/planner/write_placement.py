"""`plan --write-placement`: the recommended placement written into the catalog file, touching nothing else.

Only the `placement` and `dedicated` keys of the entries whose placement changes are rewritten, line by
line where YAML's own parser (`yaml.compose`) says they are, so every other line, comment and blank line
stays as it was. The result must parse to the old document with exactly those keys changed and must pass
the catalog's checks before it replaces the file (atomically). Refused in one line, with the file untouched:
an entry written in flow style, a comment on a line that would be replaced, and a model that comes from a
family block (its placement is the family's, for every variant; set it there by hand). An entry already
dedicated in the recommended format keeps its own copies.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from triton_mme.core.bounded import DocumentError, read_bytes
from triton_mme.core.catalog import CatalogError, load_catalog, parse_catalog
from triton_mme.core.catalog_lock import lock_path, read_lock
from triton_mme.core.errors import UserError, quoted
from triton_mme.core.files import write_atomically
from triton_mme.core.limits import MAX_CATALOG_BYTES
from triton_mme.planner.placement import PlacementPlan

PLACEMENT_KEYS = ("placement", "dedicated")
# Room above the planned copies for the component's own target tracking (the plan sizes the average rate).
MAX_COPIES_FACTOR = 2


class PlacementWriteError(UserError, ValueError):
    """A catalog the placements cannot be written into safely; one line, the file untouched."""


@dataclass(frozen=True)
class Wanted:
    """Where one model should be served: `format` on an inference component with `copies`, or (None) the
    multi-model endpoint."""

    format: str | None = None
    copies: int = 1

    def block(self) -> dict[str, Any]:
        if self.format is None:
            return {}
        top = max(self.copies * MAX_COPIES_FACTOR, self.copies + 1)
        return {
            "placement": "dedicated",
            "dedicated": {"format": self.format, "copies": self.copies, "min_copies": 1, "max_copies": top},
        }


def wanted_placements(placement: PlacementPlan) -> dict[str, Wanted]:
    """Per model name of the plan's traffic: the recommended placement (one format per model on a
    component)."""
    workload = placement.served.workload
    dedicated = set(placement.placed_dedicated())
    copies = {m.index: m.copies for m in placement.models}
    found: dict[str, Wanted] = {}
    for index, record in enumerate(workload.records):
        if index in dedicated:
            found[record.name] = Wanted(record.format, copies[index])
        else:
            found.setdefault(record.name, Wanted())
    return found


def _lines_of_block(wanted: Wanted, indent: int) -> list[str]:
    pad = " " * indent
    block = wanted.block()
    if not block:
        return []
    lines = [f"{pad}placement: dedicated\n", f"{pad}dedicated:\n"]
    lines += [f"{pad}  {key}: {value}\n" for key, value in block["dedicated"].items()]
    return lines


def _is_content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


@dataclass(frozen=True)
class _Edit:
    start: int  # first line replaced (0-based)
    end: int  # one past the last line replaced
    lines: list[str]


def _entry_edit(item: yaml.MappingNode, lines: list[str], wanted: Wanted, origin: str, name: str) -> _Edit:
    pairs = item.value
    column = pairs[0][0].start_mark.column
    # The item ends where the next token starts: the next item's "- " (or the end of the file).
    end_line, end_column = item.end_mark.line, item.end_mark.column
    ends_before = end_line >= len(lines) or lines[end_line][:end_column].strip() in ("", "-")
    end_of_item = end_line if ends_before else end_line + 1
    spans: list[tuple[int, int]] = []
    last_content = pairs[0][0].start_mark.line + 1
    for position, (key, _) in enumerate(pairs):
        start = key.start_mark.line
        stop = pairs[position + 1][0].start_mark.line if position + 1 < len(pairs) else end_of_item
        while stop > start + 1 and not _is_content(lines[stop - 1]):
            stop -= 1
        last_content = max(last_content, stop)
        if key.value in PLACEMENT_KEYS:
            spans.append((start, stop))
    for start, stop in spans:
        if any("#" in line for line in lines[start:stop]):
            raise PlacementWriteError(
                f"{origin}: model {quoted(name)}: line {start + 1} carries a comment that rewriting its "
                "placement would drop; allowed: placement lines without comments (edit this entry by hand)"
            )
    new_lines = _lines_of_block(wanted, column)
    if not spans:
        return _Edit(last_content, last_content, new_lines)
    if len(spans) == 2 and spans[0][1] != spans[1][0]:
        # Two separate places: empty the second, write the block where the first was.
        first, second = sorted(spans)
        return _Edit(first[0], second[1], new_lines + lines[first[1] : second[0]])
    return _Edit(min(s for s, _ in spans), max(e for _, e in spans), new_lines)


def _models_node(root: yaml.Node | None, origin: str) -> yaml.SequenceNode:
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value == "models" and isinstance(value, yaml.SequenceNode):
                return value
    if isinstance(root, yaml.SequenceNode):
        return root
    raise PlacementWriteError(f"{origin}: expected a mapping with a 'models' list")


def rewrite(text: str, wanted: dict[str, Wanted], *, origin: str) -> tuple[str, list[str], dict[str, Any]]:
    """The catalog text with the placements changed, the changes in words, and the expected document."""
    raw = yaml.safe_load(text)
    models = _models_node(yaml.compose(text), origin)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    raw_models = raw["models"] if isinstance(raw, dict) else raw
    expected = copy.deepcopy(raw)
    expected_models = expected["models"] if isinstance(expected, dict) else expected
    edits: list[_Edit] = []
    changes: list[str] = []
    for index, item in enumerate(models.value):
        entry = raw_models[index]
        if not isinstance(item, yaml.MappingNode) or not isinstance(entry, dict) or "family" in entry:
            continue
        name = entry.get("name")
        if name not in wanted:
            continue
        want = wanted[name]
        current = entry.get("dedicated") or {}
        is_dedicated = entry.get("placement") == "dedicated"
        if want.format is None and not is_dedicated:
            continue
        if want.format is not None and is_dedicated and current.get("format", want.format) == want.format:
            changes.append(f"{name}: kept on its inference component ({want.format}, its own copies)")
            continue
        if item.flow_style:
            raise PlacementWriteError(
                f"{origin}: model {quoted(name)} is written in flow style ({{...}}); allowed: block style "
                "entries (edit this entry by hand)"
            )
        edits.append(_entry_edit(item, lines, want, origin, name))
        target = expected_models[index]
        for key in PLACEMENT_KEYS:
            target.pop(key, None)
        target.update(copy.deepcopy(want.block()))
        before = f"dedicated ({current.get('format', '?')})" if is_dedicated else "mme"
        after = f"dedicated ({want.format}, {want.copies} copies)" if want.format else "mme"
        changes.append(f"{name}: {before} -> {after}")
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        lines[edit.start : edit.end] = edit.lines
    return "".join(lines), changes, expected


def write_placement(path: Path, placement: PlacementPlan) -> list[str]:
    """Write the recommended placement into the catalog at `path`; the changes in words (nothing written
    when nothing changes)."""
    try:
        text = read_bytes(path, max_bytes=MAX_CATALOG_BYTES).decode("utf-8")
    except (DocumentError, OSError, UnicodeDecodeError) as error:
        raise PlacementWriteError(f"{path}: cannot read the catalog ({error})") from None
    origin = str(path)
    catalog = load_catalog(path)
    wanted = wanted_placements(placement)
    written_names = _plain_entry_names(text)
    notes = []
    for name, want in wanted.items():
        if name in written_names:
            continue
        try:
            entry = catalog.entry(name)
        except CatalogError:
            notes.append(f"{name}: not in {origin}; skipped")
            continue
        if (want.format is not None) != (entry.placement == "dedicated"):
            raise PlacementWriteError(
                f"{origin}: model {quoted(name)} comes from a family block, whose placement is every "
                "variant's; allowed: placements of single entries (set the family's by hand)"
            )
    new_text, changes, expected = rewrite(text, wanted, origin=origin)
    if new_text == text:
        return [*changes, *notes]
    if yaml.safe_load(new_text) != expected:
        raise PlacementWriteError(
            f"{origin}: rewriting the placement lines would change more than the placements; allowed: a "
            "catalog in plain block style (edit it by hand)"
        )
    try:
        parse_catalog(
            expected, origin=origin, base_dir=path.resolve().parent, lock=read_lock(lock_path(path))
        )
    except CatalogError as error:
        raise PlacementWriteError(f"the placements would make the catalog invalid: {error}") from None
    write_atomically(path, new_text)
    return [*changes, *notes]


def _plain_entry_names(text: str) -> set[str]:
    raw = yaml.safe_load(text)
    models = raw.get("models") if isinstance(raw, dict) else raw
    return {m["name"] for m in models or [] if isinstance(m, dict) and "family" not in m and "name" in m}

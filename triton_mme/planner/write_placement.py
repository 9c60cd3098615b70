"""`plan --write-placement`: the recommended placement written into the catalog file, touching nothing else.

Only the `placement` and `dedicated` keys of the entries whose placement changes are rewritten, line by
line where YAML's own parser (`yaml.compose`) says they are, so every other line, comment and blank line
stays as it was. The result must parse to the old document with exactly those keys changed and must pass
the catalog's checks before it replaces the file (atomically). Refused in one line, with the file untouched:
an entry written in flow style and a comment on a line that would be replaced. A model that comes from a
family block gets its placement in the family's `overrides:` block, keyed by its variant. An entry already
dedicated in the recommended format keeps its own copies.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from triton_mme.catalog import Catalog, CatalogError, load_catalog, parse_catalog
from triton_mme.catalog.families import OVERRIDES
from triton_mme.catalog.lock import lock_path, read_lock
from triton_mme.core.bounded import DocumentError, read_bytes
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
    overrides: dict[str, Any] | None = None  # a family's overrides block as written (family edits)


def _family_edit(
    item: yaml.MappingNode,
    lines: list[str],
    entry: dict[str, Any],
    members: dict[str, tuple[str, str]],
    wanted: dict[str, Wanted],
    origin: str,
    changes: list[str],
) -> _Edit | None:
    """The family's `overrides:` block rewritten so each member is served where the plan wants it."""
    family = str(entry["family"])
    current: dict[str, Any] = copy.deepcopy(entry.get(OVERRIDES) or {})
    shared = "dedicated" if entry.get("placement") == "dedicated" else "mme"
    overrides = {str(k): v for k, v in current.items()}
    for name, (owner, key) in sorted(members.items()):
        if owner != family or name not in wanted:
            continue
        want = wanted[name]
        own = overrides.get(key, {})
        placement = own.get("placement", shared)
        dedicated = own.get("dedicated", entry.get("dedicated")) or {}
        if want.format is None and placement != "dedicated":
            continue
        if (
            want.format is not None
            and placement == "dedicated"
            and dedicated.get("format", want.format) == want.format
        ):
            changes.append(f"{name}: kept on its inference component ({want.format}, its own copies)")
            continue
        rest = {k: v for k, v in own.items() if k not in PLACEMENT_KEYS}
        block = want.block() if want.format is not None else ({} if shared == "mme" else {"placement": "mme"})
        if rest or block:
            overrides[key] = {**rest, **block}
        else:
            overrides.pop(key, None)
        after = f"dedicated ({want.format}, {want.copies} copies)" if want.format else "mme"
        changes.append(f"{name}: {placement} -> {after} (family {family}: {OVERRIDES}.{key})")
    if overrides == current:
        return None
    if item.flow_style:
        raise PlacementWriteError(
            f"{origin}: family {quoted(family)} is written in flow style ({{...}}); allowed: block style "
            "(edit its overrides by hand)"
        )
    column = item.value[0][0].start_mark.column
    dumped = (
        yaml.safe_dump({OVERRIDES: overrides}, sort_keys=False, default_flow_style=False) if overrides else ""
    )
    new_lines = [" " * column + line + "\n" for line in dumped.splitlines()]
    edit = _keys_edit(item, lines, (OVERRIDES,), new_lines, origin, family)
    return _Edit(edit.start, edit.end, edit.lines, overrides)


def _entry_edit(item: yaml.MappingNode, lines: list[str], wanted: Wanted, origin: str, name: str) -> _Edit:
    column = item.value[0][0].start_mark.column
    return _keys_edit(item, lines, PLACEMENT_KEYS, _lines_of_block(wanted, column), origin, name)


def _keys_edit(
    item: yaml.MappingNode,
    lines: list[str],
    keys: tuple[str, ...],
    new_lines: list[str],
    origin: str,
    name: str,
) -> _Edit:
    """Replace the lines of `keys` in a block mapping item by `new_lines` (appended where none is)."""
    pairs = item.value
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
        if key.value in keys:
            spans.append((start, stop))
    for start, stop in spans:
        if any("#" in line for line in lines[start:stop]):
            raise PlacementWriteError(
                f"{origin}: model {quoted(name)}: line {start + 1} carries a comment that rewriting its "
                "placement would drop; allowed: placement lines without comments (edit this entry by hand)"
            )
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


def rewrite(
    text: str,
    wanted: dict[str, Wanted],
    *,
    origin: str,
    members: dict[str, tuple[str, str]] | None = None,
) -> tuple[str, list[str], dict[str, Any]]:
    """The catalog text with the placements changed, the changes in words, and the expected document.
    `members`: model name -> (family, override key) of the models family blocks expand to; their placement
    is written into the family's `overrides:` block."""
    members = members or {}
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
        if isinstance(item, yaml.MappingNode) and isinstance(entry, dict) and "family" in entry and members:
            edit = _family_edit(item, lines, entry, members, wanted, origin, changes)
            if edit is not None:
                edits.append(edit)
                target = expected_models[index]
                target.pop(OVERRIDES, None)
                if edit.overrides:
                    target[OVERRIDES] = edit.overrides
            continue
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
    members = family_members(text, catalog)
    notes = [
        f"{name}: not in {origin}; skipped" for name in wanted if name not in {m.name for m in catalog.models}
    ]
    new_text, changes, expected = rewrite(text, wanted, origin=origin, members=members)
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


def family_members(text: str, catalog: Catalog) -> dict[str, tuple[str, str]]:
    """Model name -> (family, override key) for every model a family block of the catalog expands to."""
    raw = yaml.safe_load(text)
    models = raw.get("models") if isinstance(raw, dict) else raw
    families = [str(m["family"]) for m in models or [] if isinstance(m, dict) and "family" in m]
    plain = {m.get("name") for m in models or [] if isinstance(m, dict) and "family" not in m}
    members = {}
    for entry in catalog.models:
        if entry.name in plain:
            continue
        family = max((f for f in families if entry.name.startswith(f + "-")), key=len, default=None)
        if family is not None:
            members[entry.name] = (family, entry.name[len(family) + 1 :])
    return members

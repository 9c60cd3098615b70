"""`did you mean ...?` for a name chosen from a known set (catalog fields, architectures, folders, models)."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable

# How many names an error about an unknown one lists: the closest few, never a catalog of thousands.
CLOSEST_SHOWN = 5


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The known name nearest to `word` (difflib's ratio of at least 0.6), or None."""
    matches = difflib.get_close_matches(word, list(choices), n=1)
    return matches[0] if matches else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`did you mean <name>? ` (to put before `allowed: ...`), or "" when nothing is close."""
    match = closest(word, choices)
    return f"did you mean {match}? " if match else ""


def known_names(word: str, choices: Collection[str], what: str = "known") -> str:
    """`did you mean b? known: a, b, c` when there are at most CLOSEST_SHOWN names; otherwise the closest
    few and the count, `did you mean b? 12,000 known; closest: b, bb, ba` (difflib's ratio, else the names
    `word` begins, else `first:` the first few in order), so an error about one unknown name stays one short
    line however many names exist."""
    if not choices:
        return f"{what}: none"
    near = difflib.get_close_matches(word, list(choices), n=CLOSEST_SHOWN)
    hint = f"did you mean {near[0]}? " if near else ""
    if len(choices) <= CLOSEST_SHOWN:
        return f"{hint}{what}: {', '.join(sorted(choices))}"
    label = "closest"
    if not near:
        near = sorted(c for c in choices if c.startswith(word))[:CLOSEST_SHOWN]
    if not near:
        label, near = "first", sorted(choices)[:CLOSEST_SHOWN]
    return f"{hint}{len(choices):,} {what}; {label}: {', '.join(near)}"


def known_formats(name: str, formats: Collection[str]) -> str:
    """`formats of 'name': a, b` for a model that exists in other formats than the one asked for; ""."""
    return f"formats of '{name}': {', '.join(sorted(formats))}" if formats else ""

"""`did you mean ...?` for a name chosen from a known set (catalog fields, architectures, folders, models)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The known name nearest to `word` (difflib's ratio of at least 0.6), or None."""
    matches = difflib.get_close_matches(word, list(choices), n=1)
    return matches[0] if matches else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`did you mean <name>? ` (to put before `allowed: ...`), or "" when nothing is close."""
    match = closest(word, choices)
    return f"did you mean {match}? " if match else ""

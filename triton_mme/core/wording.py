"""Small pieces of the wording every command prints: counts with their noun, signed changes."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 archive`, `2 archives`, `0 archives` (`nouns` where the plural is not noun + "s")."""
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"


def relative_change(
    ratio: float, *, more: str = "{} more", less: str = "{} less", same: str = "the same"
) -> str:
    """A ratio to a reference as words, never signed: `23% more`, `8% less`, or `same` where it rounds to
    0% (so no "-0% more"); `{}` in `more` and `less` takes the percentage."""
    percent = round((ratio - 1) * 100)
    if percent == 0:
        return same
    return (more if percent > 0 else less).format(f"{abs(percent)}%")

"""The one error type every user-facing failure derives from.

A `UserError` is something the person running the command can fix: a bad setting, catalog entry,
archive, file or request. Its message is one line naming what is wrong and what is allowed; the
command line prints it as `error: <message>` and exits with status 1, never with a traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class UserError(Exception):
    """A problem the user can fix; the message is one line."""


def first_line(error: BaseException) -> str:
    """The first line of an exception's message, or its type name when it has none."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def quoted(value: object, limit: int = 80) -> str:
    """A value as it may appear inside a one-line message: repr escapes newlines and invisible
    characters (a right-to-left override shows as \\u202e), and a long value is cut."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]}...{text[-2:]}"


def describe_validation_error(error: ValidationError, whole: str = "") -> str:
    """pydantic's first error as one line: `archives[0].target_model: <what is allowed> (got '...')`; an error
    of the whole document is `<whole>: <message>`, or the message alone without `whole`."""
    first = error.errors()[0]
    where = ""
    for part in first["loc"]:
        where += f"[{part}]" if isinstance(part, int) else f".{part}" if where else str(part)
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown field"
    elif first["type"] == "missing":
        message = "required field is missing"
    got = first.get("input")
    shown = (
        ""
        if first["type"] in ("missing", "extra_forbidden") or isinstance(got, dict | list) or not where
        else f" (got {quoted(got)})"
    )
    where = where or whole
    return f"{where}: {message}{shown}" if where else f"{message}{shown}"

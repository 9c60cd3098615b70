"""The one error type every user-facing failure derives from.

A `UserError` is something the person running the command can fix: a bad setting, catalog entry,
archive, file or request. Its message is one line naming what is wrong and what is allowed; the
command line prints it as `error: <message>` and exits with status 1, never with a traceback.
"""

from __future__ import annotations


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

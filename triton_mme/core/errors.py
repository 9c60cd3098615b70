"""The one error type every user-facing failure derives from.

A `UserError` is something the person running the command can fix: a bad setting, catalog entry,
archive, file or request. Its message is one line naming what is wrong and what is allowed; the
command line prints it as `error: <message>` and exits with status 1, never with a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails


class UserError(Exception):
    """A problem the user can fix; the message is one line."""


def first_line(error: BaseException) -> str:
    """The first line of an exception's message, or its type name when it has none."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def printable(value: object) -> str:
    """Text from outside (a file, an archive, a model, a server's reply) as it may be printed: every
    character a terminal would act on instead of showing (ANSI escapes such as "\\x1b[2J", other
    control characters, line breaks, bidirectional overrides) appears as its escape, the way repr shows
    it; printable text, accented letters included, is unchanged."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


def quoted(value: object, limit: int = 80) -> str:
    """A value as it may appear inside a one-line message: repr escapes newlines and invisible
    characters (a right-to-left override shows as \\u202e), and a long value is cut."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]}...{text[-2:]}"


def describe_validation_error(error: ValidationError, whole: str = "") -> str:
    """pydantic's first error as one line: `archives[0].target_model: <what is allowed> (got '...')`; an error
    of the whole document is `<whole>: <message>`, or the message alone without `whole`."""
    return describe_error_details(error.errors()[0], whole=whole)


def describe_error_details(
    details: ErrorDetails, *, location: Sequence[str | int] | None = None, whole: str = ""
) -> str:
    """One of pydantic's errors as one line, at `location` (default: the error's own) within the document."""
    where = ""
    for part in details["loc"] if location is None else location:
        where += f"[{part}]" if isinstance(part, int) else f".{part}" if where else str(part)
    message = details["msg"].removeprefix("Value error, ")
    if details["type"] == "extra_forbidden":
        message = "unknown field"
    elif details["type"] == "missing":
        message = "required field is missing"
    got = details.get("input")
    shown = (
        ""
        if details["type"] in ("missing", "extra_forbidden") or isinstance(got, dict) or not where
        else f" (got {quoted(got)})"
    )
    where = where or whole
    return f"{where}: {message}{shown}" if where else message


def aws_error_code(error: BaseException) -> str | None:
    """The error code of an AWS service's answer (botocore's ClientError: `response["Error"]["Code"]`)."""
    response = getattr(error, "response", None)
    details = response.get("Error") if isinstance(response, dict) else None
    code = details.get("Code") if isinstance(details, dict) else None
    return str(code) if code is not None else None


def describe_aws_error(error: BaseException) -> str:
    """An AWS SDK error as one line, without importing botocore: a service's answer (a ClientError) as
    `<Code>: <Message>`, with the model's own status where SageMaker's runtime reports one (`<Code> (model
    status 500): ...`); anything else (a BotoCoreError: no credentials, no connection) as its first line."""
    code = aws_error_code(error)
    if code is None:
        return first_line(error)
    response = getattr(error, "response", {})
    message = printable(" ".join(str(response["Error"].get("Message") or "").split()))
    status = response.get("OriginalStatusCode")
    origin = f" (model status {status})" if status else ""
    return f"{code}{origin}: {message}" if message else f"{code}{origin}"

"""Numbers read from text or from a parsed document, within bounds: never an OverflowError, a ValueError
from int()'s digit limit, an infinity or a NaN.

`int("²")` raises (str.isdigit() says yes to superscripts), `int("9" * 5000)` raises past Python's digit
limit, `float(10**401)` raises OverflowError and `float("1e999")` is infinite. Every whole number the
project reads from a setting, a header, a command-line argument or a traffic file comes through
`whole_number`, every other number through `finite_number`; both answer None for anything else, and the
caller says in its own words what is allowed.
"""

from __future__ import annotations

import math
import re

from triton_mme.core.limits import MAX_NUMBER_DIGITS

_WHOLE = re.compile(rf"[+-]?[0-9]{{1,{MAX_NUMBER_DIGITS}}}")
_LARGEST = 10**MAX_NUMBER_DIGITS


def whole_number(value: object) -> int | None:
    """An int from an int or from ASCII digits (with a sign, surrounding spaces allowed), of at most
    MAX_NUMBER_DIGITS digits; None otherwise (a bool, a float, '²', '1e3', 401 digits)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) < _LARGEST else None
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        return int(value.strip())
    return None


def finite_number(value: object) -> float | None:
    """A finite float from an int, a float or text; None for anything else, an infinity, a NaN or a
    number too large for a float."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        whole = whole_number(value)
        return None if whole is None else float(whole)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip()
        # A float's text is short: 401 digits are no number a setting or a file means.
        if not text.isascii() or len(text) > 64:
            return None
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None

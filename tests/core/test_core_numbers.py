"""Numbers read from text within bounds: None, never an exception, for anything out of them."""

from __future__ import annotations

import pytest

from triton_mme.core.limits import MAX_NUMBER_DIGITS
from triton_mme.core.numbers import finite_number, whole_number


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("12", 12),
        (" -3 ", -3),
        (7, 7),
        ("9" * MAX_NUMBER_DIGITS, int("9" * MAX_NUMBER_DIGITS)),
        ("9" * (MAX_NUMBER_DIGITS + 1), None),
        (10**401, None),
        ("9" * 5000, None),
        ("²", None),
        ("٣", None),
        ("1e3", None),
        ("1.5", None),
        (True, None),
        (1.0, None),
        (None, None),
    ],
)
def test_whole_number(value: object, expected: int | None) -> None:
    assert whole_number(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("60", 60.0),
        ("2.5e3", 2500.0),
        (3, 3.0),
        (0.25, 0.25),
        (10**401, None),
        ("1" * 401, None),
        ("1e999", None),
        ("nan", None),
        (float("inf"), None),
        ("sixty", None),
        ("²", None),
        (False, None),
    ],
)
def test_finite_number(value: object, expected: float | None) -> None:
    assert finite_number(value) == expected

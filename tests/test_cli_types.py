"""The command line's shared argument types: a refusal is one line saying what is allowed."""

from __future__ import annotations

import argparse
import math

import pytest

from triton_mme.arguments import number_in


def test_a_number_within_its_bounds_is_read_as_a_float() -> None:
    seconds = number_in(0, 3600, "seconds from 0 to 3600")
    assert seconds("0") == 0.0
    assert seconds("12.5") == 12.5
    assert seconds("3600") == 3600.0


@pytest.mark.parametrize("text", ["-1", "3600.5", "ten", "nan", ""])
def test_anything_else_is_refused_with_what_is_allowed(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        number_in(0, 3600, "seconds from 0 to 3600")(text)
    assert str(refused.value) == f"{text!r} is not allowed; seconds from 0 to 3600"


def test_an_unbounded_number_takes_infinity_as_its_upper_end() -> None:
    assert number_in(0, math.inf, "at least 0")("1e12") == 1e12

"""Shared by the store tests (upload, store commands, add): the moto bucket and the one-line error check."""

from __future__ import annotations

import pytest

BUCKET = "model-store"


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    return err

"""Shared by the store tests (upload, store commands, add): the moto bucket and the one-line error check."""

from __future__ import annotations

from typing import Any

import pytest

BUCKET = "model-store"


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    return err


class SentHeaders:
    """Records (operation, headers) of every S3 call a client makes, as botocore is about to send it."""

    def __init__(self, client: Any) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []
        # First, so that it runs before a Stubber answers the call.
        client.meta.events.register_first("before-call.s3", self._record)

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self.calls.append((model.name, dict(params.get("headers", {}))))

    def of(self, operation: str) -> list[dict[str, str]]:
        return [headers for name, headers in self.calls if name == operation]

"""The model check's result line comes from the child that ran the model: read through the bounded reader,
so a line nested past Python's recursion limit, or one of the wrong shape, is one line naming the check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from triton_mme.archive_inspection.archive import ArchiveError
from triton_mme.model_build import sandbox


class _Child:
    def __init__(self, out: bytes) -> None:
        self.out, self.pid, self.returncode = out, 0, 0

    def communicate(self, *_: Any, **__: Any) -> tuple[bytes, bytes]:
        return self.out, b"the child's last line\n"


@pytest.mark.parametrize(
    "out",
    [b"[" * 200_000 + b"]" * 200_000, b'["checks"]', b'{"checks": "onnx"}', b"{"],
    ids=["deep", "a-list", "checks-not-a-list", "not-json"],
)
def test_a_result_line_the_check_cannot_use_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, out: bytes
) -> None:
    monkeypatch.setattr(sandbox.subprocess, "Popen", lambda *_, **__: _Child(b"noise\n" + out + b"\n"))
    with pytest.raises(ArchiveError) as raised:
        sandbox.run_checks("m.tar.gz", tmp_path)
    assert str(raised.value) == "m.tar.gz: the model check failed: the child's last line"


def test_a_result_with_its_checks_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox.subprocess, "Popen", lambda *_, **__: _Child(b'{"checks": ["ran"]}\n'))
    assert sandbox.run_checks("m.tar.gz", tmp_path) == ["ran"]

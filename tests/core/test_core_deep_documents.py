"""Every JSON or YAML document the project reads from a user, a file or a server goes through the bounded
reader: one nested 200,000 levels deep is a one-line refusal (or, for a best-effort read, skipped), never
a RecursionError."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from triton_mme.acceptance.stack import ACCEPTANCE_SETTINGS_OUTPUT, StackFacts
from triton_mme.catalog.checkpoints import parse_safetensors_header, read_hf_config
from triton_mme.client.labels import read_labels
from triton_mme.client.transport import _error_text
from triton_mme.client.triton_routes import Reply
from triton_mme.core.errors import UserError
from triton_mme.observability.caller_records import read_caller_records
from triton_mme.planner.prices import read_price_file

DEEP = "[" * 200_000 + "]" * 200_000
DEEP_OBJECT = '{"error": ' + DEEP + "}"


def test_a_deep_labels_file_is_refused_in_one_line() -> None:
    with pytest.raises(UserError, match=r"^labels-0123456789abcdef.json: not a labels file"):
        read_labels(DEEP.encode(), "labels-0123456789abcdef.json")


def test_a_deep_reply_is_shown_as_its_text() -> None:
    assert Reply(500, "application/json", DEEP_OBJECT.encode()).error_line().startswith('{"error": [[[')
    assert _error_text(DEEP_OBJECT.encode()).startswith('{"error": [[[')


def test_a_deep_caller_record_is_refused_in_one_line() -> None:
    with pytest.raises(UserError, match=r"^records.jsonl:1: not a JSON line"):
        read_caller_records([DEEP], where="records.jsonl")


@pytest.mark.parametrize("name", ["prices.json", "prices.yaml"])
def test_a_deep_price_file_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("[" * 1000 + "]" * 1000 if name.endswith(".json") else "- " * 1000 + "1\n")
    with pytest.raises(UserError, match=r"nested .*levels deep; allowed at most 64"):
        read_price_file(path)


def test_a_deep_safetensors_header_is_refused_in_one_line() -> None:
    header = DEEP.encode()
    prefix = struct.pack("<Q", len(header)) + header
    with pytest.raises(
        UserError, match=r"^model.safetensors: not a safetensors file \(its header is not JSON\)$"
    ):
        parse_safetensors_header(prefix, where="model.safetensors", file_size=len(prefix))


def test_a_deep_hugging_face_config_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(DEEP)
    with pytest.raises(UserError, match=r"^config.json: nested 200000 levels deep; allowed at most 64"):
        read_hf_config(tmp_path / "config.json", where="config.json")


def test_a_deep_stack_output_is_refused_in_one_line() -> None:
    with pytest.raises(UserError, match=r"^stack s output AcceptanceSettings: .*nested 200000 levels deep"):
        StackFacts.from_outputs({ACCEPTANCE_SETTINGS_OUTPUT: DEEP}, stack_name="s")

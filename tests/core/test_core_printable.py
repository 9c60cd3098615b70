"""Escapes in strings from outside (an archive, a model, a labels file, a server's reply) are shown, never
acted on: one sanitizer, core.errors.printable, wherever such a string is printed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from triton_mme.archive_inspection.archive import ArchiveError
from triton_mme.cli import main
from triton_mme.client.commands import _print_reply
from triton_mme.client.transport import _error_text
from triton_mme.client.triton_routes import Reply
from triton_mme.core.errors import printable
from triton_mme.model_build.inspection import check_onnx_model

CLEAR_SCREEN = "\x1b[2J"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("resnet50", "resnet50"),
        ("café", "café"),
        (f"op{CLEAR_SCREEN}", "op\\x1b[2J"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x07\x00\x9b", "\\x07\\x00\\x9b"),
        ("left\u202eright", "left\\u202eright"),
    ],
)
def test_printable_escapes_what_a_terminal_would_act_on(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_an_onnx_op_type_with_an_escape_is_shown_escaped(tmp_path: Path) -> None:
    node = helper.make_node(f"Evil{CLEAR_SCREEN}", ["x"], ["y"], domain="com.example")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph), str(path))

    with pytest.raises(ArchiveError) as refused:
        check_onnx_model("a.tar.gz", path)

    assert "uses operator Evil\\x1b[2J of domain 'com.example'" in str(refused.value)
    assert "\x1b" not in str(refused.value)


def test_a_command_line_error_naming_a_file_shows_its_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", f"/nonexistent/nope{CLEAR_SCREEN}.tar.gz"]) == 1

    error = capsys.readouterr().err
    assert "nope\\x1b[2J.tar.gz" in error
    assert "\x1b" not in error and error.count("\n") == 1


def test_labels_and_output_names_of_a_reply_are_printed_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    target = SimpleNamespace(record=object())
    image = argparse.Namespace(image=["cat.png"])
    _print_reply({"scores": np.array([[5.0, 1.0]])}, target, image, [f"cat{CLEAR_SCREEN}", "dog\n"])
    _print_reply({f"out{CLEAR_SCREEN}": np.zeros(2)}, target, argparse.Namespace(image=None), None)

    printed = capsys.readouterr().out
    assert "cat\\x1b[2J (0)" in printed
    assert "dog\\n (1)" in printed
    assert "out\\x1b[2J: shape [2]" in printed
    assert "\x1b" not in printed


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"error": f"failed to load {CLEAR_SCREEN}model"}).encode(),
        f"plain text {CLEAR_SCREEN}model".encode(),
    ],
)
def test_a_servers_error_text_is_shown_escaped(body: bytes) -> None:
    for text in (Reply(500, "application/json", body).error_line(), _error_text(body)):
        assert "\\x1b[2Jmodel" in text
        assert "\x1b" not in text

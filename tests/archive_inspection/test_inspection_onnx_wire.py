"""The ONNX wire-format walk: what protobuf forbids is refused where it stands; fields read are bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_mme.archive_inspection import onnx_check
from triton_mme.archive_inspection.archive import ArchiveError
from triton_mme.archive_inspection.onnx_check import check_onnx_file


def _refusal(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    with pytest.raises(ArchiveError) as caught:
        check_onnx_file("a.tar.gz", path)
    message = str(caught.value)
    assert "\n" not in message
    return message


def _identity_model() -> bytes:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="n")], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_a_file_of_zeros_is_refused_at_its_first_byte(tmp_path: Path) -> None:
    assert _refusal(tmp_path, bytes(64 * 1024)) == (
        "a.tar.gz: model.onnx is not an ONNX model (field number 0 at byte 0, which protobuf forbids)"
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x08\x07\x00\x00", "field number 0 at byte 2, which protobuf forbids"),
        (b"\x80\x80\x80\x80\x10\x00", "field number 536870912 at byte 0, which protobuf forbids"),
        (b"\x0b\x0c", "field 1 at byte 0 has wire type 3, which onnx.proto never uses"),
        (b"\x08\x07\x14", "field 2 at byte 2 has wire type 4, which onnx.proto never uses"),
        (b"\x0f", "field 1 at byte 0 has wire type 7, which onnx.proto never uses"),
        (b"\x3a\x05\x0a\x00", "field 7 at byte 2 runs past its message"),
        (b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "truncated or overlong varint"),
    ],
    ids=["field 0", "field past 2^29-1", "group start", "group end", "wire type 7", "overrun", "long varint"],
)
def test_what_protobuf_forbids_is_refused(tmp_path: Path, data: bytes, reason: str) -> None:
    assert _refusal(tmp_path, data) == f"a.tar.gz: model.onnx is not an ONNX model ({reason})"


def test_the_fields_read_are_counted_and_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(_identity_model())
    read = check_onnx_file("a.tar.gz", path)
    assert 5 < read < 50
    monkeypatch.setattr(onnx_check, "MAX_ONNX_FIELDS", read)
    check_onnx_file("a.tar.gz", path)
    monkeypatch.setattr(onnx_check, "MAX_ONNX_FIELDS", read - 1)
    assert _refusal(tmp_path, _identity_model()) == (
        f"a.tar.gz: model.onnx has more than {read - 1:,} fields in its graphs, nodes and tensors; "
        f"allowed at most {read - 1:,}"
    )

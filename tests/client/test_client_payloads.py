"""Request bodies byte by byte, replies in Triton's own formats, and the InvokeEndpoint size limit."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import botocore
import numpy as np
import pytest
from client_support import BINARY_PREFIX, triton_binary_reply

from triton_mme.client.payloads import (
    PayloadError,
    check_request_size,
    decode_response,
    encode_binary_request,
    encode_json_request,
    header_length,
)
from triton_mme.core.platform import PLATFORM


def _images(batch: int) -> np.ndarray:
    return np.random.default_rng(batch).standard_normal((batch, 3, 224, 224), dtype=np.float32)


def _split_binary(body: bytes, content_type: str) -> tuple[dict, bytes]:
    assert content_type.startswith(BINARY_PREFIX)
    length = int(content_type.removeprefix(BINARY_PREFIX))
    return json.loads(body[:length]), body[length:]


def test_binary_request_is_a_json_header_then_the_raw_tensor() -> None:
    images = _images(2)
    body, content_type = encode_binary_request({"input": images}, ["output"])

    header, tail = _split_binary(body, content_type)
    assert header["inputs"] == [
        {
            "name": "input",
            "shape": [2, 3, 224, 224],
            "datatype": "FP32",
            "parameters": {"binary_data_size": images.nbytes},
        }
    ]
    assert header["outputs"] == [{"name": "output", "parameters": {"binary_data": True}}]
    assert tail == images.tobytes()


def test_binary_request_with_several_inputs_concatenates_them_in_header_order() -> None:
    ids = np.arange(32, dtype=np.int64).reshape(2, 16)
    mask = np.ones((2, 16), dtype=np.int64)
    body, content_type = encode_binary_request({"input_ids": ids, "attention_mask": mask})

    header, tail = _split_binary(body, content_type)
    assert [(i["name"], i["datatype"], i["shape"]) for i in header["inputs"]] == [
        ("input_ids", "INT64", [2, 16]),
        ("attention_mask", "INT64", [2, 16]),
    ]
    assert tail == ids.tobytes() + mask.tobytes()
    # No outputs named: Triton is asked for all of them, in binary.
    assert header["parameters"] == {"binary_data_output": True}


def test_json_request_is_kserve_v2() -> None:
    images = _images(1)[:, :, :4, :4].copy()
    body, content_type = encode_json_request({"input": images}, ["output"])

    assert content_type == "application/json"
    request = json.loads(body)
    (tensor,) = request["inputs"]
    assert (tensor["name"], tensor["shape"], tensor["datatype"]) == ("input", [1, 3, 4, 4], "FP32")
    np.testing.assert_array_equal(np.asarray(tensor["data"], dtype=np.float32), images.reshape(-1))
    assert request["outputs"] == [{"name": "output", "parameters": {"binary_data": False}}]


def test_a_dtype_triton_cannot_carry_is_refused() -> None:
    with pytest.raises(PayloadError, match="complex64 has no Triton datatype"):
        encode_binary_request({"input": np.zeros((1, 2), dtype=np.complex64)})


def test_decodes_a_binary_reply_with_several_outputs() -> None:
    logits = np.random.default_rng(1).standard_normal((2, 1000), dtype=np.float32)
    classes = np.array([[3], [7]], dtype=np.int64)
    content_type, body = triton_binary_reply({"output": logits, "classes": classes})

    decoded = decode_response(content_type, body)

    assert set(decoded) == {"output", "classes"}
    np.testing.assert_array_equal(decoded["output"], logits)
    np.testing.assert_array_equal(decoded["classes"], classes)
    assert decoded["output"].dtype == np.float32


def test_decodes_a_json_reply() -> None:
    body = json.dumps(
        {"outputs": [{"name": "output", "datatype": "FP32", "shape": [1, 3], "data": [0.5, 1.5, -2.0]}]}
    ).encode()
    decoded = decode_response("application/json", body)
    np.testing.assert_array_equal(decoded["output"], np.array([[0.5, 1.5, -2.0]], dtype=np.float32))


def test_header_size_is_read_from_the_content_type() -> None:
    assert header_length(f"{BINARY_PREFIX}158") == 158
    assert header_length("application/vnd.sagemaker-triton.binary+json; json-header-size=42") == 42
    assert header_length("application/json") is None
    with pytest.raises(PayloadError, match="lacks json-header-size"):
        header_length("application/vnd.sagemaker-triton.binary+json")


@pytest.mark.parametrize(
    ("content_type", "body", "message"),
    [
        ("application/json", b'{"error":"model not ready"}', "answered with an error: model not ready"),
        ("application/json", b"<html>502 Bad Gateway</html>", "cannot read the reply"),
        (f"{BINARY_PREFIX}999", b'{"outputs":[]}', "999-byte JSON header but the body has 14 bytes"),
    ],
)
def test_unreadable_replies_are_one_line_errors(content_type: str, body: bytes, message: str) -> None:
    with pytest.raises(PayloadError, match=message) as caught:
        decode_response(content_type, body)
    assert "\n" not in str(caught.value)


def test_the_limit_is_the_one_botocore_enforces_for_invoke_endpoint() -> None:
    model = Path(botocore.__file__).parent / "data/sagemaker-runtime/2017-05-13/service-2.json.gz"
    shapes = json.loads(gzip.decompress(model.read_bytes()))["shapes"]
    assert shapes["BodyBlob"]["max"] == PLATFORM.limits.sagemaker_max_payload_bytes.value


def test_eight_images_fit_in_binary_but_not_in_json() -> None:
    images = _images(8)
    binary = encode_binary_request({"input": images}, ["output"])
    as_json = encode_json_request({"input": images}, ["output"])

    check_request_size(binary)
    assert 4_800_000 < len(binary.body) < 4_900_000
    assert len(as_json.body) > 3 * PLATFORM.limits.sagemaker_max_payload_bytes.value
    with pytest.raises(PayloadError) as caught:
        check_request_size(as_json)
    message = str(caught.value)
    assert f"{len(as_json.body):,} bytes" in message and "6,291,456-byte" in message
    assert "binary" in message and "smaller batch" in message


def test_an_oversized_binary_request_suggests_a_smaller_batch() -> None:
    request = encode_binary_request({"input": _images(11)})
    with pytest.raises(PayloadError, match=r"limit; send a smaller batch$"):
        check_request_size(request)

"""Request and reply bodies for Triton behind SageMaker: KServe v2 JSON and Triton's binary extension.

Pure functions over numpy arrays and bytes, built with tritonclient's own helpers, so the endpoint
client, the local Triton check and the benchmark send byte-identical requests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import tritonclient.http as triton_http
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from triton_mme.core.errors import UserError, first_line
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.platform import PLATFORM
from triton_mme.core.replies import reply_bytes_per_sample, reply_overhead

JSON_CONTENT_TYPE = "application/json"
BINARY_CONTENT_TYPE = "application/vnd.sagemaker-triton.binary+json"
HEADER_SIZE_PARAMETER = "json-header-size"


class PayloadError(UserError, ValueError):
    """A request that cannot be built or sent, or a reply that cannot be read; one line."""


class EncodedRequest(NamedTuple):
    body: bytes
    content_type: str


def triton_datatype(array: np.ndarray) -> str:
    datatype = np_to_triton_dtype(array.dtype)
    if datatype is None:
        raise PayloadError(
            f"numpy dtype {array.dtype} has no Triton datatype (use bool, int*, uint*, float*)"
        )
    return str(datatype)


def _encode(
    inputs: Mapping[str, np.ndarray], outputs: Sequence[str], *, binary: bool
) -> tuple[bytes, int | None]:
    tensors = []
    for name, array in inputs.items():
        tensor = triton_http.InferInput(name, list(array.shape), triton_datatype(array))
        tensor.set_data_from_numpy(np.ascontiguousarray(array), binary_data=binary)
        tensors.append(tensor)
    requested = [triton_http.InferRequestedOutput(name, binary_data=binary) for name in outputs]
    body, header_length = triton_http.InferenceServerClient.generate_request_body(tensors, outputs=requested)
    return bytes(body), header_length


def encode_binary_request(inputs: Mapping[str, np.ndarray], outputs: Sequence[str] = ()) -> EncodedRequest:
    """A JSON header naming the tensors, then their raw bytes; the header size goes in the content type.

    Without named outputs Triton is asked for every output, in binary.
    """
    body, header_length = _encode(inputs, outputs, binary=True)
    if header_length is None:  # no tensor carried binary data (all inputs empty)
        header_length = len(body)
    return EncodedRequest(body, f"{BINARY_CONTENT_TYPE};{HEADER_SIZE_PARAMETER}={header_length}")


def encode_json_request(inputs: Mapping[str, np.ndarray], outputs: Sequence[str] = ()) -> EncodedRequest:
    """KServe v2 JSON: `{"inputs": [{"name", "shape", "datatype", "data"}], "outputs": [...]}`.

    Name the outputs to get them back as JSON too; otherwise Triton returns them in binary.
    """
    body, _ = _encode(inputs, outputs, binary=False)
    return EncodedRequest(body, JSON_CONTENT_TYPE)


def encode_request(
    inputs: Mapping[str, np.ndarray], outputs: Sequence[str] = (), *, binary: bool
) -> EncodedRequest:
    return encode_binary_request(inputs, outputs) if binary else encode_json_request(inputs, outputs)


def header_length(content_type: str) -> int | None:
    """N from `...binary+json;json-header-size=N`; None for a body that is all JSON."""
    media_type, *parameters = (part.strip() for part in content_type.split(";"))
    if media_type.lower() != BINARY_CONTENT_TYPE:
        return None
    for parameter in parameters:
        key, _, value = parameter.partition("=")
        if key.strip().lower() == HEADER_SIZE_PARAMETER:
            if not value.strip().isdigit():
                raise PayloadError(
                    f"reply content type '{content_type}': {HEADER_SIZE_PARAMETER} is not a number"
                )
            return int(value)
    raise PayloadError(f"reply content type '{content_type}' lacks {HEADER_SIZE_PARAMETER}")


def decode_response(content_type: str, body: bytes) -> dict[str, np.ndarray]:
    """Every output of a Triton reply (JSON or binary), by name."""
    length = header_length(content_type)
    if length is not None and length > len(body):
        raise PayloadError(f"reply declares a {length}-byte JSON header but the body has {len(body)} bytes")
    try:
        result = triton_http.InferenceServerClient.parse_response_body(body, header_length=length)
        reply = result.get_response()
    except (ValueError, UnicodeDecodeError) as error:
        raise PayloadError(f"cannot read the reply as a Triton response ({first_line(error)})") from None
    if "error" in reply:
        raise PayloadError(f"the server answered with an error: {reply['error']}")
    try:
        return {output["name"]: result.as_numpy(output["name"]) for output in reply.get("outputs", [])}
    except (ValueError, KeyError, TypeError, InferenceServerException) as error:
        raise PayloadError(f"cannot read the reply's outputs ({first_line(error)})") from None


def check_request_size(
    request: EncodedRequest, limit: int = PLATFORM.limits.sagemaker_max_payload_bytes.value
) -> None:
    """Refuse a body the endpoint would reject, before sending it."""
    size = len(request.body)
    if size <= limit:
        return
    advice = "send it in binary (drop --json) or a smaller batch"
    if not request.content_type.startswith(JSON_CONTENT_TYPE):
        advice = "send a smaller batch"
    raise PayloadError(
        f"request body is {size:,} bytes ({size / 1e6:.1f} MB), over SageMaker's {limit:,}-byte "
        f"({limit / 2**20:.0f} MiB) InvokeEndpoint limit; {advice}"
    )


def _limit_text(limit: int) -> str:
    return f"SageMaker's {limit:,}-byte ({limit / 2**20:.0f} MiB) InvokeEndpoint response limit"


def _fitting_batch(per_sample: int, overhead: int, limit: int) -> str:
    fits = max((limit - overhead) // per_sample, 0) if per_sample else 0
    return f"send a batch of at most {fits}" if fits else "even one sample does not fit"


def check_reply_estimate(
    outputs: Sequence[TensorSpec],
    batch: int,
    *,
    sequence_length: int | None = None,
    limit: int = PLATFORM.limits.sagemaker_max_payload_bytes.value,
) -> None:
    """Refuse, before sending, a batch whose reply could not come back through InvokeEndpoint.

    The estimate is the binary reply (outputs plus their JSON header), a dynamic dimension counted at the
    model's sequence bound; a JSON reply is larger still, so a refusal here is never wrong.
    """
    per_sample = reply_bytes_per_sample(outputs, sequence_length)
    if per_sample is None:
        return
    overhead = reply_overhead(len(outputs))
    size = per_sample * batch + overhead
    if size > limit:
        raise PayloadError(
            f"the reply to a batch of {batch} would be at least {size:,} bytes ({size / 1e6:.1f} MB), over "
            f"{_limit_text(limit)}; {_fitting_batch(per_sample, overhead, limit)}"
        )


def check_reply_size(
    reply_size: int, batch: int, *, limit: int = PLATFORM.limits.sagemaker_max_payload_bytes.value
) -> None:
    """Refuse a reply that SageMaker would not return (a local server answers it anyway)."""
    if reply_size <= limit:
        return
    per_sample = math.ceil(reply_size / max(batch, 1))
    raise PayloadError(
        f"the reply is {reply_size:,} bytes ({reply_size / 1e6:.1f} MB), over {_limit_text(limit)}: the "
        f"endpoint would refuse it; {_fitting_batch(per_sample, 0, limit)}"
    )

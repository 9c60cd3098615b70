"""4. Request payloads with the project's client code: KServe v2 JSON vs Triton's binary extension.

For each FP32 image batch: request bytes, and the time to encode the request plus decode a reply
carrying the same tensor (what an echo model would send back, built once outside the timing).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np

from benchmarks.context import RunContext
from benchmarks.results import Section
from benchmarks.timing import measure_side_by_side
from triton_mme.client.payloads import (
    EncodedRequest,
    decode_response,
    encode_binary_request,
    encode_json_request,
    header_length,
)

NAME = "payloads"
TITLE = "4. Request payloads: KServe JSON vs Triton binary"
IMAGE_SHAPE = (3, 224, 224)
INPUT_NAME = "input"


def echo_reply(request: EncodedRequest) -> tuple[str, bytes]:
    """The reply a model returning its input would get from Triton: the request with inputs -> outputs."""
    length = header_length(request.content_type)
    header_bytes = request.body if length is None else request.body[:length]
    header = json.loads(header_bytes)
    header = {"model_name": "echo", "outputs": header["inputs"]}
    if length is None:
        return request.content_type, json.dumps(header).encode()
    new_header = json.dumps(header).encode()
    content_type = request.content_type.replace(f"={length}", f"={len(new_header)}")
    return content_type, new_header + request.body[length:]


def round_trip(
    encode: Callable[[dict[str, np.ndarray]], EncodedRequest],
    tensor: dict[str, np.ndarray],
    reply: tuple[str, bytes],
) -> Callable[[], object]:
    def call() -> object:
        encode(tensor)
        return decode_response(*reply)

    return call


def run(ctx: RunContext, section: Section) -> None:
    batches = ctx.pick((1, 8), (1, 2))
    shape = ctx.pick(IMAGE_SHAPE, (3, 32, 32))
    rng = np.random.default_rng(0)
    for batch in batches:
        tensor = {INPUT_NAME: rng.standard_normal((batch, *shape)).astype(np.float32)}
        tag = f"{batch}x{'x'.join(map(str, shape))}"
        encoders = {"json": encode_json_request, "binary": encode_binary_request}
        replies = {kind: echo_reply(encode(tensor)) for kind, encode in encoders.items()}
        for kind, (content_type, body) in replies.items():
            decoded = decode_response(content_type, body)[INPUT_NAME]
            if not np.array_equal(decoded, tensor[INPUT_NAME]):
                raise RuntimeError(f"{kind} round trip of {tag} did not return the same tensor")
        for kind, encode in encoders.items():
            section.add(
                f"{kind}.{tag}.bytes", f"{kind.upper()} request {tag}", len(encode(tensor).body), "bytes"
            )

        samples = measure_side_by_side(
            {kind: round_trip(encoders[kind], tensor, replies[kind]) for kind in encoders},
            warmup=ctx.pick(2, 1),
            repeat=ctx.pick(10, 2) if batch > 1 else ctx.pick(20, 3),
            rounds=2,
        )
        for kind, timed in samples.items():
            section.add_samples(
                f"{kind}.{tag}.time", f"{kind.upper()} encode + decode {tag}", timed, unit="ms", scale=1000
            )
        section.ratio(
            f"size.{tag}", f"JSON / binary bytes, {tag}", f"json.{tag}.bytes", f"binary.{tag}.bytes"
        )
        section.ratio(
            f"time.{tag}",
            f"JSON / binary encode + decode time, {tag}",
            f"json.{tag}.time",
            f"binary.{tag}.time",
        )
        section.target(f"Binary payload smaller than JSON, {tag}", f"size.{tag}", ">=", 5.0)
        section.target(f"Binary payload faster to encode + decode, {tag}", f"time.{tag}", ">=", 100.0)
        section.chart += [f"json.{tag}.time", f"binary.{tag}.time"]
    section.notes.append(
        "Encode = triton_mme.client.payloads.encode_json_request / encode_binary_request; decode = "
        "decode_response of a reply that carries the same tensor back (a model echoing its input). "
        "Single-threaded Python; times are p50 per round trip."
    )

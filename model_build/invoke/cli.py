"""`python -m model_build.invoke`: send one request to the endpoint and print what the model says."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from model_build.invoke.inputs import InputError, image_batch, npy_inputs, text_batch
from model_build.invoke.labels import class_names, top_k
from model_build.invoke.payloads import PayloadError, check_request_size, decode_response, encode_request
from model_build.invoke.transport import (
    TransportError,
    invoke_endpoint,
    invoke_local,
    runtime_client,
    write_dry_run,
)
from model_build.manifest import ArchiveRecord, Manifest

DEFAULT_MANIFEST = Path("build/models/manifest.json")
TOP_K = 5


class UsageError(ValueError):
    """Arguments that do not fit together or do not fit the model; one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m model_build.invoke",
        description="Send one inference request to the multi-model endpoint (or a local Triton, or files) "
        "and print the reply: top-5 classes for image models, output tensors otherwise. Requests are "
        "Triton binary by default (application/vnd.sagemaker-triton.binary+json), KServe v2 JSON "
        "with --json.",
    )
    where = parser.add_argument_group("where the request goes (one of)")
    where.add_argument("--endpoint", help="SageMaker endpoint name")
    where.add_argument("--local", metavar="URL", help="local multi-model server, e.g. http://127.0.0.1:8080")
    where.add_argument(
        "--dry-run",
        type=Path,
        metavar="DIR",
        help="write body.bin and content-type.txt to DIR instead of sending",
    )
    model = parser.add_argument_group("which model")
    chosen = model.add_mutually_exclusive_group(required=True)
    chosen.add_argument("--target-model", metavar="KEY", help="archive key under the model prefix")
    chosen.add_argument("--model", metavar="NAME", help="logical model name, resolved through the manifest")
    model.add_argument(
        "--format", help="format to use when the model has several (onnx, torchscript, tensorrt)"
    )
    model.add_argument(
        "--manifest",
        type=Path,
        default=DEFAULT_MANIFEST,
        help="build manifest: resolves --model, gives input names, dims and outputs (default: %(default)s)",
    )
    data = parser.add_argument_group("input (one of)")
    given = data.add_mutually_exclusive_group(required=True)
    given.add_argument(
        "--image", nargs="+", type=Path, metavar="FILE", help="image file(s), one per batch row"
    )
    given.add_argument("--text", nargs="+", metavar="TEXT", help="text(s), one per batch row")
    given.add_argument("--npy", nargs="+", metavar="[NAME=]FILE", help=".npy array(s) sent as they are")
    parser.add_argument("--tokenizer", help="tokenizer directory or id (default: the model's source id)")
    parser.add_argument("--json", action="store_true", help="send KServe v2 JSON instead of Triton binary")
    parser.add_argument("--region", help="AWS region of the endpoint (default: the AWS configuration's)")
    return parser


def _record(args: argparse.Namespace) -> ArchiveRecord | None:
    if args.model is None and not args.manifest.is_file():
        return None  # --target-model alone: fine for --npy NAME=FILE
    try:
        manifest = Manifest.read(args.manifest)
    except OSError as error:
        raise UsageError(f"{args.manifest}: cannot read the manifest ({error.strerror})") from None
    except (ValueError, ValidationError) as error:
        raise UsageError(f"{args.manifest}: not a valid manifest ({str(error).splitlines()[0]})") from None
    if args.model is not None:
        try:
            return manifest.find(args.model, args.format)
        except KeyError as error:
            raise UsageError(f"{args.manifest}: {error.args[0]}") from None
    return next((a for a in manifest.archives if a.target_model == args.target_model), None)


def _needs(record: ArchiveRecord | None, what: str) -> ArchiveRecord:
    if record is None:
        raise UsageError(
            f"{what} needs the model's manifest entry: pass --model NAME or a --manifest naming it"
        )
    return record


def _inputs(args: argparse.Namespace, record: ArchiveRecord | None) -> dict[str, np.ndarray]:
    if args.image:
        entry = _needs(record, "--image")
        if len(entry.inputs) != 1:
            raise UsageError(f"--image: model '{entry.name}' takes {len(entry.inputs)} inputs, not one image")
        return {entry.inputs[0].name: image_batch(args.image, entry.inputs[0], entry.source)}
    if args.text:
        entry = _needs(record, "--text")
        tokenizer = args.tokenizer or entry.source.partition(":")[2]
        return text_batch(args.text, entry.inputs, tokenizer)
    return npy_inputs(args.npy, record.inputs if record else None)


def _check_batch(inputs: dict[str, np.ndarray], record: ArchiveRecord | None) -> None:
    batch_sizes = {array.shape[0] if array.ndim else 1 for array in inputs.values()}
    if len(batch_sizes) != 1:
        raise UsageError(f"inputs disagree on the batch size: {sorted(batch_sizes)}")
    batch = batch_sizes.pop()
    if record is not None and 0 < record.max_batch_size < batch:
        raise UsageError(
            f"batch of {batch} is above model '{record.name}' max_batch_size {record.max_batch_size}"
        )


def _print_reply(
    outputs: dict[str, np.ndarray], record: ArchiveRecord | None, args: argparse.Namespace
) -> None:
    if args.image and record is not None and len(outputs) == 1:
        (scores,) = outputs.values()
        if scores.ndim == 2:
            names = class_names(record.source)
            for path, predictions in zip(args.image, top_k(scores, names, TOP_K), strict=True):
                print(f"{path}:")
                for rank, guess in enumerate(predictions, start=1):
                    print(f"  {rank}. {guess.probability:7.2%}  {guess.label} ({guess.class_index})")
            return
    for name, array in outputs.items():
        preview = np.array2string(array.reshape(-1)[:8], precision=4, separator=", ")
        print(f"{name}: shape {list(array.shape)} {array.dtype}, first values {preview}")


def run(args: argparse.Namespace, runtime: Any | None = None) -> int:
    if args.endpoint is not None and args.local is not None:
        raise UsageError("give either --endpoint NAME or --local URL, not both")
    if args.endpoint is None and args.local is None and args.dry_run is None:
        raise UsageError("say where to send the request: --endpoint NAME, --local URL or --dry-run DIR")
    record = _record(args)
    target_model = record.target_model if record else args.target_model
    inputs = _inputs(args, record)
    _check_batch(inputs, record)
    outputs = [spec.name for spec in record.outputs] if record else []
    request = encode_request(inputs, outputs, binary=not args.json)
    kind = "JSON" if args.json else "binary"
    check_request_size(request)
    if args.dry_run is not None:
        body_path, type_path = write_dry_run(args.dry_run, request)
        print(f"{kind} request for {target_model}: {len(request.body):,} bytes -> {body_path}, {type_path}")
        return 0
    started = time.perf_counter()
    if args.local is not None:
        reply = invoke_local(args.local, target_model, request)
    else:
        reply = invoke_endpoint(runtime or runtime_client(args.region), args.endpoint, target_model, request)
    elapsed_ms = (time.perf_counter() - started) * 1000
    print(
        f"{target_model}: {kind} request {len(request.body):,} bytes, "
        f"reply {len(reply.body):,} bytes in {elapsed_ms:.0f} ms"
    )
    _print_reply(decode_response(reply.content_type, reply.body), record, args)
    return 0


def main(argv: Sequence[str] | None = None, *, runtime: Any | None = None) -> int:
    """Parse the command line and invoke; errors are one line on stderr and exit status 1."""
    args = build_parser().parse_args(argv)
    try:
        return run(args, runtime)
    except (UsageError, InputError, PayloadError, TransportError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

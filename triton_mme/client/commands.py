"""`triton-mme invoke`: send one request to the endpoint and print what the model says."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from triton_mme.arguments import number_in, positive_int
from triton_mme.core.errors import printable, quoted
from triton_mme.core.locations import BUILD_DIR, MANIFEST_FILE_NAME

DEFAULT_MANIFEST = str(BUILD_DIR / MANIFEST_FILE_NAME)
TOP_K = 5


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "invoke",
        help="send one request to the endpoint (or a local Triton, or files) and print the reply",
        description="Send one inference request to the multi-model endpoint (or a local Triton, or files) "
        ""
        "and print the reply: a classifier's top classes per input (named by the labels the build "
        "recorded), output tensors otherwise (or with --raw). Requests are "
        "Triton binary by default (application/vnd.sagemaker-triton.binary+json), KServe v2 JSON "
        "with --json.",
    )
    where = parser.add_argument_group(
        "where the request goes (SageMaker, the local endpoint or files); the manifest says which SageMaker "
        "endpoint serves the model"
    )
    where.add_argument("--endpoint", help="SageMaker multi-model endpoint name (stack output EndpointName)")
    where.add_argument(
        "--component-endpoint",
        metavar="NAME",
        help="SageMaker endpoint of the inference components, for models placed on one (stack output "
        "InferenceComponentEndpointName)",
    )
    where.add_argument(
        "--local",
        metavar="URL",
        help="local endpoint (serve-local, both routes), e.g. http://127.0.0.1:8080",
    )
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
        "--format",
        help="format to use when the model has several (onnx, torchscript, tensorrt; default: the only one, "
        "else onnx where built)",
    )
    model.add_argument(
        "--manifest",
        default=DEFAULT_MANIFEST,
        metavar="PATH|S3_URL",
        help="build manifest, a file or s3://bucket/manifests/manifest.json: resolves --model, gives input "
        "names, dims, outputs, preprocessing, labels and tokenizer (default: %(default)s)",
    )
    data = parser.add_argument_group("input (one of)")
    given = data.add_mutually_exclusive_group(required=True)
    given.add_argument(
        "--image", nargs="+", type=Path, metavar="FILE", help="image file(s), one per batch row"
    )
    given.add_argument("--text", nargs="+", metavar="TEXT", help="text(s), one per batch row")
    given.add_argument("--npy", nargs="+", metavar="[NAME=]FILE", help=".npy array(s) sent as they are")
    parser.add_argument(
        "--tokenizer", type=Path, help="tokenizer.json or its directory (default: the one the build recorded)"
    )
    parser.add_argument("--json", action="store_true", help="send KServe v2 JSON instead of Triton binary")
    parser.add_argument(
        "--raw",
        action="store_true",
        help="print the output tensors as they are, not a classifier's top classes per input",
    )
    parser.add_argument(
        "--top-k",
        type=positive_int,
        default=TOP_K,
        metavar="K",
        help="classes shown per input (default: %(default)s)",
    )
    parser.add_argument("--region", help="AWS region of the endpoint (default: the AWS configuration's)")
    add_metrics_arguments(parser)
    parser.set_defaults(handler=invoke)


def add_metrics_arguments(parser: argparse.ArgumentParser) -> None:
    """Opt-in per-TargetModel caller metrics (docs/observability.md); off unless one is given."""
    published = parser.add_argument_group("caller metrics per TargetModel (off unless asked for)")
    published.add_argument(
        "--metrics-out", metavar="FILE|-", help="append embedded-metric-format lines to FILE (- for stdout)"
    )
    published.add_argument(
        "--metrics-cloudwatch", action="store_true", help="send them with CloudWatch PutMetricData"
    )
    published.add_argument(
        "--cold-threshold-ms",
        type=number_in(0, 3_600_000, "milliseconds from 0 to 3,600,000"),
        metavar="MS",
        help="count a request this slow as a cold start where the endpoint does not say (SageMaker)",
    )


def invoke(args: argparse.Namespace, runtime: Any = None) -> int:
    from triton_mme.client import invoke as calls
    from triton_mme.client.manifest_source import ManifestSource
    from triton_mme.client.payloads import decode_response, encode_request
    from triton_mme.client.transport import write_dry_run

    remote = args.endpoint is not None or args.component_endpoint is not None
    if remote and args.local is not None:
        raise calls.UsageError(
            "give either --endpoint NAME (and --component-endpoint NAME) or --local URL, not both"
        )
    if not remote and args.local is None and args.dry_run is None:
        raise calls.UsageError(
            "say where to send the request: --endpoint NAME, --local URL or --dry-run DIR "
            "(--component-endpoint NAME for a model on an inference component)"
        )
    if args.model and args.manifest == DEFAULT_MANIFEST and not Path(DEFAULT_MANIFEST).is_file():
        from triton_mme.client.local_manifest import served_manifest

        served = served_manifest(args.local) if args.local is not None else None
        if served is not None:
            print(f"note: --manifest {served} (the folder {args.local} serves)", file=sys.stderr)
            args.manifest = str(served)
    if args.model and args.manifest == DEFAULT_MANIFEST and not Path(DEFAULT_MANIFEST).is_file():
        raise calls.UsageError(
            f"no {DEFAULT_MANIFEST} here; pass --manifest DIR/manifest.json for the build folder you built "
            "(`triton-mme build --out DIR`) or serve (`serve-local --models DIR`)"
        )
    target = calls.resolve_target(
        ManifestSource(args.manifest), model=args.model, format=args.format, target_model=args.target_model
    )
    if args.image:
        inputs = calls.image_inputs(target, args.image)
    elif args.text:
        inputs = calls.text_inputs(target, args.text, args.tokenizer)
    else:
        inputs = calls.array_inputs(target, args.npy)
    batch = calls.check_batch(inputs, target.record)
    calls.check_reply(target, batch)
    # Labels are read before anything is sent: a missing or broken labels file is one line, not a
    # traceback after the endpoint has answered.
    names = None if getattr(args, "raw", False) else calls.class_names(target)
    request = encode_request(inputs, calls.output_names(target), binary=not args.json)
    kind = "JSON" if args.json else "binary"
    # A dedicated model's component is named after the endpoint it is on (the local stand-in's with --local).
    route = (
        target.route_on(args.component_endpoint)
        if args.component_endpoint and args.local is None
        else target.route
    )
    if args.dry_run is not None:
        from triton_mme.client.payloads import check_request_size

        check_request_size(request)
        body_path, type_path = write_dry_run(args.dry_run, request)
        size = f"{len(request.body):,} bytes"
        print(f"{kind} request for {route.describe()}: {size} -> {body_path}, {type_path}")
        return 0
    from triton_mme.client.caller_metrics import caller_metrics

    sagemaker = (
        None if args.local is not None else calls.endpoint_for(target, args.endpoint, args.component_endpoint)
    )
    metrics = caller_metrics(
        out=args.metrics_out,
        cloudwatch=args.metrics_cloudwatch,
        endpoint=sagemaker,
        region=args.region,
        cold_threshold_ms=args.cold_threshold_ms,
    )
    started = time.perf_counter()
    try:
        reply = calls.send(
            request,
            target,
            endpoint=args.endpoint,
            local_url=args.local,
            runtime=runtime,
            region=args.region,
            metrics=metrics,
            component_endpoint=args.component_endpoint,
        )
    finally:
        if metrics is not None:
            metrics.close()
    elapsed_ms = (time.perf_counter() - started) * 1000
    calls.check_reply(target, batch, reply)
    warning = calls.random_weights_warning(target, text=bool(args.text) and args.tokenizer is None)
    if warning:
        print(warning, file=sys.stderr)
    print(
        f"{route.describe()}: {kind} request {len(request.body):,} bytes, "
        f"reply {len(reply.body):,} bytes in {elapsed_ms:.0f} ms"
    )
    _print_reply(decode_response(reply.content_type, reply.body), target, args, names)
    return 0


def _print_reply(
    outputs: dict[str, Any], target: Any, args: argparse.Namespace, names: list[str] | None
) -> None:
    import numpy as np

    from triton_mme.client.labels import top_k

    raw = getattr(args, "raw", False)
    rows = args.image or getattr(args, "text", None)
    classifier = args.image or names is not None or set(outputs) == {"logits"}
    if rows and classifier and not raw and target.record is not None and len(outputs) == 1:
        (scores,) = outputs.values()
        if scores.ndim == 2 and len(scores) == len(rows):
            ranked = top_k(scores, names, getattr(args, "top_k", TOP_K))
            for row, predictions in zip(rows, ranked, strict=True):
                print(f"{printable(row)}:" if args.image else f"{quoted(str(row), 70)}:")
                for rank, guess in enumerate(predictions, start=1):
                    print(
                        f"  {rank}. {guess.probability:7.2%}  {printable(guess.label)} ({guess.class_index})"
                    )
            return
    for name, array in outputs.items():
        preview = np.array2string(array.reshape(-1)[:8], precision=4, separator=", ")
        print(f"{printable(name)}: shape {list(array.shape)} {array.dtype}, first values {preview}")

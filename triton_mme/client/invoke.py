"""Call a model of the endpoints: resolve its TargetModel (and inference component), prepare inputs, send,
read the reply.

The functions here are what the `invoke` command composes; an application can use them directly:

    source = ManifestSource("s3://my-bucket/manifests/manifest.json")
    target = resolve_target(source, model="resnet50")
    inputs = image_inputs(target, [Path("cat.jpg")])
    reply = send(encode_request(inputs, output_names(target), binary=True), target, endpoint="my-endpoint",
                 component_endpoint="my-component-endpoint")

`send` routes by the manifest: TargetModel on the multi-model endpoint, InferenceComponentName on the
inference-component endpoint for a model placed there (docs/placement.md).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from triton_mme.client.caller_metrics import CallerMetrics
from triton_mme.client.inputs import image_batch, load_tokenizer, npy_inputs, text_batch
from triton_mme.client.labels import read_labels
from triton_mme.client.manifest_source import ManifestSource
from triton_mme.client.payloads import (
    EncodedRequest,
    check_reply_estimate,
    check_reply_size,
    check_request_size,
)
from triton_mme.client.transport import (
    Reply,
    Route,
    TransportError,
    invoke_endpoint,
    invoke_local,
    route_of,
    runtime_client,
)
from triton_mme.core.errors import UserError
from triton_mme.core.manifest import ArchiveRecord
from triton_mme.core.naming import ARCHIVE_NAME, LOCAL_COMPONENT_ENDPOINT
from triton_mme.core.replies import sequence_bound


class UsageError(UserError, ValueError):
    """Arguments that do not fit together or do not fit the model; one line."""


@dataclass(frozen=True)
class Target:
    """The TargetModel to call and, when a manifest names it, its entry and where its files are."""

    target_model: str
    record: ArchiveRecord | None = None
    source: ManifestSource | None = None

    def needs_record(self, what: str) -> ArchiveRecord:
        if self.record is None:
            raise UsageError(
                f"{what} needs the model's manifest entry: pass --model NAME or a --manifest naming it"
            )
        return self.record

    @property
    def route(self) -> Route:
        """TargetModel on the multi-model endpoint, or the inference component the manifest places it on (of
        the local stand-in; `route_on` names an endpoint's)."""
        return self.route_on(LOCAL_COMPONENT_ENDPOINT)

    def route_on(self, component_endpoint: str) -> Route:
        return (
            route_of(self.record, component_endpoint) if self.record is not None else Route(self.target_model)
        )

    def companion(self, role: str) -> bytes | None:
        if self.record is None or self.source is None or role not in self.record.files:
            return None
        return self.source.companion(self.record.files[role])


def resolve_target(
    source: ManifestSource | None,
    *,
    model: str | None = None,
    format: str | None = None,
    target_model: str | None = None,
) -> Target:
    """By logical name (`model`, through the manifest) or by TargetModel (the manifest is optional).

    Either way only one model's record is read, and `source` keeps it (ManifestSource.record): an application
    creates its source once and resolves on every call. A TargetModel names its model and format, so its
    record is that model's, when the manifest's archive of them is this very key."""
    if (model is None) == (target_model is None):
        raise UsageError("name the model either by --model NAME or by --target-model KEY")
    if model is not None:
        if source is None:
            raise UsageError("--model needs a --manifest to resolve the name")
        try:
            record = source.record(model, format)
        except KeyError as error:
            raise UsageError(f"{source.location}: {error.args[0]}") from None
        return Target(record.target_model, record, source)
    assert target_model is not None
    named = ARCHIVE_NAME.check(target_model, where="--target-model")
    if source is None or not source.exists():
        return Target(target_model)
    try:
        found: ArchiveRecord | None = source.record(named["name"], named["format"])
    except KeyError:
        found = None  # not in the manifest: sent as named, without what the record would check
    if found is not None and found.target_model != target_model:
        found = None  # another build of the model: its record does not describe this archive
    return Target(target_model, found, source)


def image_inputs(target: Target, paths: Sequence[Path]) -> dict[str, np.ndarray]:
    record = target.needs_record("--image")
    if "tokenizer" in record.files:
        raise UsageError(f"--image: model '{record.name}' is a text model; pass --text TEXT... instead")
    if len(record.inputs) != 1:
        raise UsageError(f"--image: model '{record.name}' takes {len(record.inputs)} inputs, not one image")
    spec = record.inputs[0]
    return {spec.name: image_batch(paths, spec, record.preprocessing)}


def text_inputs(target: Target, texts: Sequence[str], tokenizer: Path | None = None) -> dict[str, np.ndarray]:
    """Tokenised with `tokenizer` (a tokenizer.json or its directory), else the one the build recorded."""
    record = target.needs_record("--text")
    if record.preprocessing is not None:
        raise UsageError(f"--text: model '{record.name}' is an image model; pass --image FILE... instead")
    if tokenizer is not None:
        return text_batch(texts, record.inputs, load_tokenizer(tokenizer))
    recorded = target.companion("tokenizer")
    if recorded is None:
        raise UsageError(
            f"model '{record.name}' has no recorded tokenizer (it was built without pretrained weights or "
            "added from elsewhere); pass --tokenizer DIR with the model's tokenizer.json"
        )
    return text_batch(texts, record.inputs, load_tokenizer(recorded))


def array_inputs(target: Target, arguments: Sequence[str]) -> dict[str, np.ndarray]:
    return npy_inputs(arguments, target.record.inputs if target.record else None)


def check_batch(inputs: dict[str, np.ndarray], record: ArchiveRecord | None) -> int:
    """The batch size all inputs agree on, within the model's max_batch_size."""
    batch_sizes = {array.shape[0] if array.ndim else 1 for array in inputs.values()}
    if len(batch_sizes) != 1:
        raise UsageError(f"inputs disagree on the batch size: {sorted(batch_sizes)}")
    batch = batch_sizes.pop()
    if record is not None and 0 < record.max_batch_size < batch:
        raise UsageError(
            f"batch of {batch} is above model '{record.name}' max_batch_size {record.max_batch_size}"
        )
    return batch


def check_reply(target: Target, batch: int, reply: Reply | None = None) -> None:
    """The reply within InvokeEndpoint's response limit: estimated from the manifest's output specs
    before sending, measured when a reply is there (a local server returns what SageMaker would not)."""
    if reply is not None:
        check_reply_size(len(reply.body), batch)
    elif target.record is not None:
        record = target.record
        check_reply_estimate(record.outputs, batch, sequence_length=sequence_bound(record.inputs))


def random_weights_warning(target: Target, *, text: bool = False) -> str | None:
    """One line when the archive was built with random weights: its labels (or the stand-in tokenizer the
    offline build trained) say nothing about what a real model would answer."""
    record = target.record
    if record is None or record.weights != "random":
        return None
    what = "its scores are noise and the labels only name classes"
    if text:
        what = "its outputs are noise and its tokenizer is the offline stand-in, not the model's own"
    return f"warning: model '{record.name}' was built with random weights (weights=random): {what}"


def output_names(target: Target) -> list[str]:
    return [spec.name for spec in target.record.outputs] if target.record else []


def class_names(target: Target) -> list[str] | None:
    content = target.companion("labels")
    if content is None or target.record is None:
        return None
    return read_labels(content, target.record.files["labels"])


def endpoint_for(target: Target, endpoint: str | None, component_endpoint: str | None) -> str:
    """The SageMaker endpoint that serves the target: the multi-model endpoint, or the inference-component
    endpoint for a model the manifest places on an inference component; UsageError naming the one missing."""
    route = target.route
    if route.inference_component is None:
        if endpoint is None:
            raise UsageError(
                f"{target.target_model} is served by the multi-model endpoint: pass --endpoint NAME "
                "(the stack output EndpointName)"
            )
        return endpoint
    if component_endpoint is None:
        name = target.record.name if target.record is not None else target.target_model
        raise UsageError(
            f"model '{name}' is served by an inference component of its own: pass --component-endpoint NAME "
            "(the stack output InferenceComponentEndpointName)"
        )
    return component_endpoint


def send(
    request: EncodedRequest,
    target: Target,
    *,
    endpoint: str | None = None,
    local_url: str | None = None,
    runtime: Any = None,
    region: str | None = None,
    metrics: CallerMetrics | None = None,
    component_endpoint: str | None = None,
) -> Reply:
    """Send to SageMaker (InvokeEndpoint with TargetModel on the multi-model `endpoint`, or with
    InferenceComponentName on `component_endpoint` where the manifest places the model on an inference
    component) or to the local endpoint, which serves both routes; `metrics`, when given, records the
    request's latency, error and cold start per TargetModel."""
    remote = endpoint is not None or component_endpoint is not None
    if remote == (local_url is not None):
        raise UsageError("give either --endpoint NAME (and --component-endpoint NAME) or --local URL")
    check_request_size(request)
    sagemaker = None if local_url is not None else endpoint_for(target, endpoint, component_endpoint)
    if metrics is None:
        return _send(request, target, sagemaker, local_url, runtime, region)
    started = time.perf_counter()
    try:
        reply = _send(request, target, sagemaker, local_url, runtime, region)
    except TransportError:
        metrics.record(target.target_model, (time.perf_counter() - started) * 1000, error=True)
        raise
    cold = None if reply.model_cache is None else reply.model_cache == "miss"
    metrics.record(target.target_model, (time.perf_counter() - started) * 1000, cold=cold)
    return reply


def _send(
    request: EncodedRequest,
    target: Target,
    endpoint: str | None,
    local_url: str | None,
    runtime: Any,
    region: str | None,
) -> Reply:
    if local_url is not None:
        return invoke_local(local_url, target.route, request)
    assert endpoint is not None
    return invoke_endpoint(runtime or runtime_client(region), endpoint, target.route_on(endpoint), request)

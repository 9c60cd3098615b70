"""Check 1, the endpoint serves every model: each archive of the live manifest called with its golden data.

Per archive, through the client's invoke path (client.transport, one attempt per call): the golden inputs at
batch 1, the outputs compared with PyTorch's within the tolerance the serving check applied to that archive
(its serving report records it; core.tolerances by format when the report does not have the archive), then
the same request again. The first call is timed from its first attempt to its answer (cold: download and
load included), the second alone (warm). While the model loads, SageMaker answers ModelNotReadyException
and keeps loading for up to `PLATFORM.limits.model_loading_limit_seconds` (core.platform); the call is
retried until then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from triton_mme.acceptance.report import SERVING, Check, cannot_tell, failed, passed
from triton_mme.acceptance.timing import DEFAULT_SERVING_SAMPLE, Timing
from triton_mme.client.manifest_source import ManifestSource
from triton_mme.client.payloads import EncodedRequest, PayloadError, decode_response, encode_binary_request
from triton_mme.client.transport import Route, TransportError, invoke_endpoint, route_of
from triton_mme.core.errors import UserError, first_line
from triton_mme.core.golden import GoldenData
from triton_mme.core.manifest import ArchiveRecord, Manifest
from triton_mme.core.naming import GOLDEN_ROLE
from triton_mme.core.platform import PLATFORM
from triton_mme.core.serving_report import ServingReport
from triton_mme.core.tolerances import FP16, GPU_FP32, Tolerance, max_abs_error

MODEL_NOT_READY = "ModelNotReadyException"
RETRY_INTERVAL_S = 5.0

LOADING_LIMIT_S = PLATFORM.limits.model_loading_limit_seconds.value


class _Refused(Exception):
    """The archive did not pass; the message says what was seen, `fix` what to do."""

    def __init__(self, seen: str, fix: str) -> None:
        super().__init__(seen)
        self.fix = fix


def tolerance_for(record: ArchiveRecord, report: ServingReport | None) -> Tolerance:
    """The serving check's own tolerance for this archive, else the GPU one of its format and precision."""
    checked = report.find(record.target_model) if report else None
    if checked is not None and {"atol", "rtol"} <= set(checked.tolerance):
        return Tolerance(atol=checked.tolerance["atol"], rtol=checked.tolerance["rtol"])
    if record.format == "tensorrt" and record.details.get("precision") == "fp16":
        return FP16
    return GPU_FP32


def _layout(record: ArchiveRecord) -> tuple[object, ...]:
    """What archives of one kind share: format and tensors (a family's fine-tunes have the same)."""
    tensors = tuple((t.name, t.datatype, t.dims) for t in (*record.inputs, *record.outputs))
    return (record.format, record.max_batch_size, tensors)


def sample_archives(manifest: Manifest, limit: int) -> list[ArchiveRecord]:
    """Every archive when there are at most `limit` (or `limit` is 0); otherwise `limit` of them: one of each
    format and tensor layout first, then the rest by the order of their content hash. The same manifest gives
    the same sample; a new build's archives (new hashes) give another."""
    archives = sorted(manifest.archives, key=lambda r: r.sha256)
    if limit == 0 or len(archives) <= limit:
        return list(manifest.archives)
    chosen: dict[str, ArchiveRecord] = {}
    layouts: set[tuple[object, ...]] = set()
    for record in archives:
        if _layout(record) not in layouts:
            layouts.add(_layout(record))
            chosen[record.target_model] = record
    for record in archives:
        if len(chosen) >= max(limit, len(layouts)):
            break
        chosen.setdefault(record.target_model, record)
    return [r for r in manifest.archives if r.target_model in chosen]


def check_serving(
    endpoint: str,
    manifest: Manifest,
    source: ManifestSource,
    report: ServingReport | None,
    runtime: Any,
    timing: Timing,
    *,
    loading_window_s: float = LOADING_LIMIT_S,
    sample: int = DEFAULT_SERVING_SAMPLE,
    component_endpoint: str | None = None,
) -> list[Check]:
    """Call each sampled archive where the manifest places it: by TargetModel on `endpoint`, or, for a
    dedicated model, by InferenceComponentName on `component_endpoint` (the stack's inference-component
    endpoint, None where it has none)."""
    if not manifest.archives:
        return [
            failed(
                SERVING,
                "archives",
                expected="at least one archive in the live manifest",
                seen=f"{source.location} names none",
                fix="publish a build (`make deploy`) before accepting the endpoint",
            )
        ]
    chosen = sample_archives(manifest, sample)
    checks = [
        _check_archive(
            _Where(endpoint, component_endpoint), record, source, report, runtime, timing, loading_window_s
        )
        for record in chosen
    ]
    if len(chosen) < len(manifest.archives):
        # Each call may be a cold load of up to the loading window: every archive of a large catalog would
        # take hours. The serving check loaded and replayed every one of them in the same image before.
        checks.append(
            passed(
                SERVING,
                "sample",
                expected="every archive, or a sample of them (--serving-sample)",
                seen=f"{len(chosen)} of {len(manifest.archives):,} archives called: each format and tensor "
                "layout at least once, the rest by content hash (--serving-sample 0 calls every one)",
            )
        )
    return checks


class _Where(NamedTuple):
    endpoint: str
    component_endpoint: str | None

    def of(self, record: ArchiveRecord) -> tuple[str, Route]:
        """The endpoint and the route a record is called by."""
        if not record.is_dedicated:
            return self.endpoint, Route(record.target_model)
        if self.component_endpoint is None:
            raise _Refused(
                "the manifest places it on an inference component, but the stack promises no "
                "inference-component endpoint",
                "deploy the catalog whose build this manifest is (`make deploy`): its dedicated entries make "
                "the inference-component endpoint (docs/placement.md)",
            )
        return self.component_endpoint, route_of(record, self.component_endpoint)


def _check_archive(
    where: _Where,
    record: ArchiveRecord,
    source: ManifestSource,
    report: ServingReport | None,
    runtime: Any,
    timing: Timing,
    loading_window_s: float,
) -> Check:
    name = f"{record.name}/{record.format}"
    tolerance = tolerance_for(record, report)
    expected = f"{record.target_model} answers its golden data within {tolerance.describe()}"
    try:
        golden = _golden(record, source)
        inputs, outputs = golden.batch(1)
        request = encode_binary_request(inputs, [spec.name for spec in record.outputs])
        started = timing.now()
        served, retries = _call_while_loading(where, record, request, runtime, timing, loading_window_s)
        cold_s = timing.now() - started
        error = _compare(served, outputs, tolerance)
        started = timing.now()
        served, _ = _call_while_loading(where, record, request, runtime, timing, 0.0)
        warm_ms = (timing.now() - started) * 1000
        error = max(error, _compare(served, outputs, tolerance))
    except _Refused as refusal:
        return failed(SERVING, name, expected=expected, seen=str(refusal), fix=refusal.fix)
    return passed(
        SERVING,
        name,
        expected=expected,
        seen=f"max error {error:.2g}; cold {cold_s:.2f} s ({retries} ModelNotReady retries), "
        f"warm {warm_ms:.0f} ms",
        cold_s=cold_s,
        warm_ms=warm_ms,
        max_abs_error=error,
        not_ready_retries=retries,
    )


def _golden(record: ArchiveRecord, source: ManifestSource) -> GoldenData:
    file_name = record.files.get(GOLDEN_ROLE)
    if file_name is None:
        raise _Refused(
            "the manifest names no golden data for it",
            "rebuild it with `triton-mme build` (every build writes golden data) and deploy again",
        )
    try:
        golden = GoldenData.from_bytes(source.companion(file_name), where=file_name)
        golden.check_against(record.inputs, record.outputs, where=file_name)
    except UserError as error:
        raise _Refused(first_line(error), "see manifest/files: publish the build's companion files") from None
    return golden


def _call_while_loading(
    where: _Where,
    record: ArchiveRecord,
    request: EncodedRequest,
    runtime: Any,
    timing: Timing,
    loading_window_s: float,
) -> tuple[dict[str, np.ndarray], int]:
    """The decoded reply and how many ModelNotReadyException answers came before it."""
    started, retries = timing.now(), 0
    endpoint, route = where.of(record)
    while True:
        try:
            reply = invoke_endpoint(runtime, endpoint, route, request)
            break
        except TransportError as error:
            waited = timing.now() - started
            if error.code == MODEL_NOT_READY and waited + RETRY_INTERVAL_S <= loading_window_s:
                retries += 1
                timing.sleep(RETRY_INTERVAL_S)
                continue
            if error.code == MODEL_NOT_READY:
                raise _Refused(
                    f"still {MODEL_NOT_READY} after {waited:.0f} s ({retries} retries)",
                    f"SageMaker loads a model for up to {LOADING_LIMIT_S} s: read the endpoint's log "
                    "group for the load, and compare its size with the instance's memory "
                    "(docs/acceptance.md#serving)",
                ) from None
            raise _Refused(
                first_line(error),
                "read Triton's error in the endpoint's log group (/aws/sagemaker/Endpoints/<endpoint>); a "
                "model that cannot be downloaded under network isolation fails only here "
                "(docs/acceptance.md#serving)",
            ) from None
    try:
        return decode_response(reply.content_type, reply.body), retries
    except PayloadError as error:
        raise _Refused(f"the reply cannot be read: {error}", "see docs/acceptance.md#serving") from None


def _compare(
    served: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], tolerance: Tolerance
) -> float:
    worst = 0.0
    for name, reference in expected.items():
        value = served.get(name)
        if value is None or value.shape != reference.shape:
            shape = None if value is None else value.shape
            raise _Refused(
                f"output '{name}' is {'missing' if value is None else f'shaped {shape}'}, the reference "
                f"{reference.shape}",
                "the endpoint serves another model under this key: see manifest/archives",
            )
        error = max_abs_error(value, reference)
        worst = max(worst, error)
        if not tolerance.holds(value, reference):
            raise _Refused(
                f"output '{name}' differs from the reference by up to {error:.3g} "
                f"(allowed {tolerance.describe()})",
                "the archive answers differently on the endpoint than in the serving check: compare the "
                "image tag and InferenceAmiVersion (template/*) with the serving report's server "
                "(docs/acceptance.md#serving)",
            )
    return worst


ISOLATION_EXPECTED = (
    "on the multi-model endpoint, a request naming model A answers with A's model, never B's, and a load "
    "of A "
    "leaves B serving (an unload cannot be caused through the runtime API: SageMaker unloads under memory "
    "pressure)"
)


def isolation_pair(manifest: Manifest) -> tuple[ArchiveRecord, ArchiveRecord] | None:
    """Two multi-model archives of different models (the first by content hash, then the next model), or
    None."""
    shared = sorted((r for r in manifest.archives if not r.is_dedicated), key=lambda r: r.sha256)
    first = next(iter(shared), None)
    other = next((r for r in shared if first is not None and r.name != first.name), None)
    return (first, other) if first is not None and other is not None else None


def check_isolation(
    endpoint: str,
    manifest: Manifest,
    source: ManifestSource,
    report: ServingReport | None,
    runtime: Any,
    timing: Timing,
    *,
    loading_window_s: float = LOADING_LIMIT_S,
) -> Check:
    """Models A and B called B, A, B, A, each with its own golden inputs: each answer must be its own model's
    within the serving tolerance (so never the other's), and B's call right after A's (which may load A) must
    still answer. On an image without Triton's SageMaker fixes (docs/platform.md, "The default tag") this says
    what that image does; on a fixed one it must hold."""
    pair = isolation_pair(manifest)
    if pair is None:
        models = {record.name for record in manifest.archives if not record.is_dedicated}
        if len(models) == 1:
            return passed(
                SERVING,
                "isolation",
                expected=ISOLATION_EXPECTED,
                seen=f"one model ({models.pop()}) on the multi-model endpoint: no other model's answer to "
                "get",
            )
        return cannot_tell(
            SERVING,
            "isolation",
            expected=ISOLATION_EXPECTED,
            seen="the live manifest has no archive on the multi-model endpoint",
            why="isolation needs models on the multi-model endpoint: deploy a catalog with two",
        )
    where = _Where(endpoint, None)
    calls = []
    for record in pair:
        inputs, outputs = _golden(record, source).batch(1)
        request = encode_binary_request(inputs, [spec.name for spec in record.outputs])
        calls.append((record, request, outputs, tolerance_for(record, report)))
    b_call, a_call = calls[1], calls[0]
    try:
        for step, (record, request, outputs, tolerance) in enumerate((b_call, a_call, b_call, a_call)):
            try:
                served, _ = _call_while_loading(where, record, request, runtime, timing, loading_window_s)
                _compare(served, outputs, tolerance)
            except _Refused as refusal:
                after = (
                    "" if step == 0 else f" (call {step + 1} of 4, right after {calls[step % 2][0].name}'s)"
                )
                raise _Refused(f"{record.target_model}{after}: {refusal}", refusal.fix) from None
    except _Refused as refusal:
        return failed(
            SERVING,
            "isolation",
            expected=ISOLATION_EXPECTED,
            seen=str(refusal),
            fix="a wrong model's answer or a model taken down by another's load is a serving defect: compare "
            'the image tag with docs/platform.md ("The default tag": the fixes each tag has) and read the '
            "endpoint's log group (docs/acceptance.md#cross-model-isolation)",
        )
    a, b = pair
    return passed(
        SERVING,
        "isolation",
        expected=ISOLATION_EXPECTED,
        seen=f"{b.target_model}, {a.target_model}, {b.target_model}, {a.target_model}: each answered its own "
        "golden data",
    )

"""Check every archive of a build directory in a running Triton: load, golden replay, timing, unload.

Per archive, in the order of the manifest:
1. check and unpack it as `add` does and as SageMaker unpacks it (archive_inspection, into
   `<scratch>/<hash>/model`) and let the target prepare it (the local stand-in; nothing on the real image);
2. `POST /models` under its TargetModel name, timed: the load time. A refusal fails the archive with the
   first line of Triton's error;
3. replay its golden data (core.golden) at batch 1 and at the largest batch an InvokeEndpoint request and
   reply can carry (at most max_batch_size), in Triton's binary format (client.payloads), and compare every
   output with PyTorch's within the tolerance of its format, precision and device (core.tolerances);
4. `warmup` untimed then `requests` timed requests at each of those batches, one at a time: p50, p99 and
   throughput (rows per second);
5. device memory in use (nvidia-smi) before the load and after the requests: what the loaded, used model
   holds; then `DELETE /models/<TargetModel>` and the unpacked copy is removed.

A failing archive does not stop the others: the report holds every archive, and the first failure is the
one line the command stops with.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.archive_inspection import ArchiveError, ExtractedArchive, inspect_archive
from triton_mme.client.payloads import PayloadError, decode_response, encode_binary_request
from triton_mme.core.errors import UserError, first_line
from triton_mme.core.golden import GoldenData, GoldenError
from triton_mme.core.manifest import MANIFEST_FILE_NAME, ArchiveRecord, Manifest
from triton_mme.core.naming import GOLDEN_ROLE
from triton_mme.core.platform import PLATFORM
from triton_mme.core.replies import reply_overhead
from triton_mme.core.serving_report import ArchiveServing, BatchFigures, ServingReport
from triton_mme.core.tolerances import FP16, FP32, GPU_FP32, Tolerance, max_abs_error
from triton_mme.core.wording import plural
from triton_mme.serving_check.targets import LoadRefused, NotRunnableHere, ServingTarget

DEFAULT_REQUESTS = 30
DEFAULT_WARMUP = 3


class CheckError(UserError):
    """The check cannot start (no build, no manifest); one line."""


class ArchiveFailed(Exception):
    """This archive did not pass; the message is the one line the report records."""


@dataclass(frozen=True)
class CheckSettings:
    requests: int = DEFAULT_REQUESTS
    warmup: int = DEFAULT_WARMUP


def read_build(directory: Path) -> Manifest:
    path = directory / MANIFEST_FILE_NAME
    try:
        manifest = Manifest.read(path)
    except OSError as error:
        raise CheckError(f"{path}: cannot read the build manifest ({error.strerror})") from None
    except ValueError as error:
        raise CheckError(f"{path}: not a valid build manifest ({first_line(error)})") from None
    if not manifest.archives:
        raise CheckError(f"{path}: names no archives; nothing to check")
    return manifest


def check_build(
    directory: Path,
    target: ServingTarget,
    *,
    settings: CheckSettings = CheckSettings(),
    progress: Callable[[ArchiveServing], None] | None = None,
    phase: Callable[[str], None] | None = None,
) -> ServingReport:
    """Check every archive the build directory's manifest names on a started target; `progress` hears of
    each archive's result, `phase` of each step as it starts (`2/3 <TargetModel>: loading`)."""
    manifest = read_build(directory)
    results = []
    total = len(manifest.archives)
    with tempfile.TemporaryDirectory(prefix="serving-check-") as scratch:
        for index, record in enumerate(manifest.archives, start=1):
            step = _announcer(phase, f"{index}/{total} {record.target_model}")
            result = check_archive(directory, record, target, Path(scratch), settings, phase=step)
            results.append(result)
            if progress:
                progress(result)
    return ServingReport(
        manifest_sha256=manifest.sha256, server=target.server, gpu=target.gpu, archives=tuple(results)
    )


@dataclass
class _Measured:
    """What is known of an archive so far, kept when a later step fails."""

    load_seconds: float | None = None
    errors: dict[str, float] = field(default_factory=dict)
    tolerance: dict[str, float] = field(default_factory=dict)


def _announcer(phase: Callable[[str], None] | None, prefix: str) -> Callable[[str], None]:
    def announce(what: str) -> None:
        if phase is not None:
            phase(f"{prefix}: {what}")

    return announce


def _quiet(_: str) -> None:
    return None


def check_archive(
    directory: Path,
    record: ArchiveRecord,
    target: ServingTarget,
    scratch: Path,
    settings: CheckSettings,
    *,
    phase: Callable[[str], None] = _quiet,
) -> ArchiveServing:
    # The check loads only a file with the recorded sha256 (`_unpack`): the report names that hash.
    identity = {
        "target_model": record.target_model,
        "name": record.name,
        "format": record.format,
        "sha256": record.sha256,
    }
    measured = _Measured()
    # As the platform does (/opt/ml/models/<hash>/model): one directory per TargetModel.
    home = scratch / hashlib.sha256(record.target_model.encode()).hexdigest()[:16]
    try:
        phase("checking and unpacking the archive")
        golden = _golden(directory, record)
        model_root = home / "model"
        unpacked = _unpack(directory, record, model_root)
        target.prepare(record.target_model, unpacked.model_dir)
        memory_before = target.memory_used_mib()
        phase("loading it in Triton")
        started = time.perf_counter()
        reply = target.routes.load(record.target_model, model_root)
        measured.load_seconds = time.perf_counter() - started
        if not reply.ok:
            raise ArchiveFailed(f"Triton did not load it: {reply.error_line()}")
        tolerance = _tolerance(record, unpacked.contents.config, target)
        try:
            batches = _exercise(record, target, golden, tolerance, measured, settings, phase)
            memory_after = target.memory_used_mib()
        finally:
            target.routes.unload(record.target_model)
        memory = (
            memory_after - memory_before if memory_before is not None and memory_after is not None else None
        )
        return ArchiveServing(
            **identity,
            passed=True,
            load_seconds=measured.load_seconds,
            gpu_memory_mib=memory,
            max_abs_error=measured.errors,
            tolerance=measured.tolerance,
            batches=batches,
        )
    except NotRunnableHere as reason:
        return ArchiveServing(**identity, passed=False, skipped=str(reason))
    except (ArchiveFailed, LoadRefused, ArchiveError, GoldenError) as failure:
        return ArchiveServing(
            **identity,
            passed=False,
            error=first_line(failure).removeprefix(f"{record.target_model}: "),
            load_seconds=measured.load_seconds,
            max_abs_error=measured.errors,
            tolerance=measured.tolerance,
        )
    except OSError as error:  # the server went away mid-check
        return ArchiveServing(**identity, passed=False, error=f"Triton did not answer: {first_line(error)}")
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _golden(directory: Path, record: ArchiveRecord) -> GoldenData:
    name = record.files.get(GOLDEN_ROLE)
    if name is None:
        raise ArchiveFailed("the manifest names no golden data for it (rebuild it with `triton-mme build`)")
    path = directory / name
    try:
        golden = GoldenData.from_bytes(path.read_bytes(), where=name)
    except OSError as error:
        raise ArchiveFailed(f"{path}: cannot read its golden data ({error.strerror})") from None
    golden.check_against(record.inputs, record.outputs, where=name)
    return golden


def _unpack(directory: Path, record: ArchiveRecord, model_root: Path) -> ExtractedArchive:
    path = directory / record.target_model
    if not path.is_file():
        raise ArchiveFailed(f"{path}: the archive named in the manifest is missing")
    # The record's file (its sha256), holding the record's model and format under a name that states them.
    return inspect_archive(path, model_root, record=record)


def largest_batch(record: ArchiveRecord, golden: GoldenData) -> int:
    """The largest batch one InvokeEndpoint call can carry both ways (6 MB each), at most max_batch_size."""
    tensors = len(golden.inputs) + len(golden.outputs)
    room = min(
        PLATFORM.limits.sagemaker_max_payload_bytes.value, PLATFORM.limits.sagemaker_max_payload_bytes.value
    ) - reply_overhead(tensors)
    largest = max(record.max_batch_size, 1)
    for arrays in (golden.inputs, golden.outputs):
        per_row = sum(value.nbytes for value in arrays.values()) // golden.rows
        if per_row:
            largest = min(largest, room // per_row)
    return max(largest, 1)


def _tolerance(record: ArchiveRecord, config: pb.ModelConfig, target: ServingTarget) -> Tolerance:
    """FP16 where the GPU computes in FP16, GPU FP32 elsewhere on a GPU, the build's FP32 on a CPU."""
    if not target.on_gpu:
        return FP32
    if record.format == "tensorrt" and record.details.get("precision") == "fp16":
        return FP16
    # The archive's checked config (a GPU target prepares nothing: it is the config.pbtxt Triton loaded).
    for accelerator in config.optimization.execution_accelerators.gpu_execution_accelerator:
        if accelerator.name == "tensorrt" and accelerator.parameters.get("precision_mode") == "FP16":
            return FP16  # ONNX Runtime's TensorRT accelerator in FP16
    return GPU_FP32


def _call(
    target: ServingTarget, record: ArchiveRecord, inputs: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    request = encode_binary_request(inputs, [spec.name for spec in record.outputs])
    reply = target.routes.invoke(record.target_model, request.body, request.content_type)
    batch = len(next(iter(inputs.values())))
    if not reply.ok:
        raise ArchiveFailed(
            f"Triton refused a request at batch {batch}: HTTP {reply.status}: {reply.error_line()}"
        )
    try:
        return decode_response(reply.content_type, reply.body)
    except PayloadError as error:
        raise ArchiveFailed(f"the reply at batch {batch} cannot be read: {error}") from None


def _compare(
    served: Mapping[str, np.ndarray],
    expected: Mapping[str, np.ndarray],
    tolerance: Tolerance,
    batch: int,
    measured: _Measured,
) -> None:
    measured.tolerance = {"atol": tolerance.atol, "rtol": tolerance.rtol}
    for name, reference in expected.items():
        if name not in served:
            raise ArchiveFailed(
                f"output '{name}' is missing from the reply at batch {batch} (got {sorted(served)})"
            )
        value = served[name]
        if value.shape != reference.shape:
            raise ArchiveFailed(
                f"output '{name}' has shape {value.shape} at batch {batch}, the reference {reference.shape}"
            )
        error = max_abs_error(value, reference)
        measured.errors[name] = max(measured.errors.get(name, 0.0), error)
        if not tolerance.holds(value, reference):
            raise ArchiveFailed(
                f"output '{name}' differs from the reference by up to {error:.3g} at batch {batch} "
                f"(allowed {tolerance.describe()})"
            )


def _exercise(
    record: ArchiveRecord,
    target: ServingTarget,
    golden: GoldenData,
    tolerance: Tolerance,
    measured: _Measured,
    settings: CheckSettings,
    phase: Callable[[str], None] = _quiet,
) -> tuple[BatchFigures, ...]:
    sizes = sorted({1, largest_batch(record, golden)})
    for size in sizes:
        phase(f"comparing the reply at batch {size} with the golden data")
        inputs, expected = golden.batch(size)
        _compare(_call(target, record, inputs), expected, tolerance, size, measured)
    timed = []
    for size in sizes:
        phase(f"timing batch {size}: {settings.warmup} + {plural(settings.requests, 'request')}")
        timed.append(_timed(record, target, golden.batch(size)[0], settings))
    return tuple(timed)


def _timed(
    record: ArchiveRecord, target: ServingTarget, inputs: Mapping[str, np.ndarray], settings: CheckSettings
) -> BatchFigures:
    batch = len(next(iter(inputs.values())))
    request = encode_binary_request(inputs, [spec.name for spec in record.outputs])
    timings = []
    for index in range(settings.warmup + settings.requests):
        started = time.perf_counter()
        reply = target.routes.invoke(record.target_model, request.body, request.content_type)
        elapsed = time.perf_counter() - started
        if not reply.ok:
            raise ArchiveFailed(
                f"Triton refused a timed request at batch {batch}: HTTP {reply.status}: {reply.error_line()}"
            )
        if index >= settings.warmup:
            timings.append(elapsed)
    milliseconds = np.array(timings) * 1000
    return BatchFigures(
        batch_size=batch,
        requests=len(timings),
        latency_p50_ms=float(np.percentile(milliseconds, 50)),
        latency_p99_ms=float(np.percentile(milliseconds, 99)),
        throughput_per_s=batch * len(timings) / float(np.sum(timings)),
    )


def summary(result: ArchiveServing) -> str:
    """One line per archive, as the command prints it."""
    if result.skipped:
        return f"skipped {result.target_model}: {result.skipped}"
    if not result.passed:
        return f"FAILED  {result.target_model}: {result.error}"
    first, last = result.batches[0], result.batches[-1]
    worst = max(result.max_abs_error.values(), default=0.0)
    memory = f", GPU memory {result.gpu_memory_mib:.0f} MiB" if result.gpu_memory_mib is not None else ""
    return (
        f"passed  {result.target_model}: load {result.load_seconds:.2f} s{memory}, "
        f"p50 {first.latency_p50_ms:.1f} ms at batch 1, {last.throughput_per_s:.1f} rows/s at batch "
        f"{last.batch_size}, max error {worst:.2g}"
    )

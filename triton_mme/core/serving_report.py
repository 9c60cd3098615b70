"""The serving report: how every archive of a build loaded and answered in the endpoint's own Triton.

Written by the serving check (on the GPU runner in the `sagemaker-tritonserver` image, or offline
against the local CPU Triton) beside the build's manifest, and read by the capacity planner. Figures
carry their unit in the field name; a figure that could not be measured where the check ran is None.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from triton_mme.core.bounded import DocumentError, load_json
from triton_mme.core.errors import UserError, describe_validation_error
from triton_mme.core.limits import MAX_REPORT_BYTES
from triton_mme.core.locations import SERVING_REPORT_FILE_NAME as SERVING_REPORT_FILE_NAME

SERVING_REPORT_SCHEMA_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BatchFigures(_Frozen):
    batch_size: int
    requests: int
    latency_p50_ms: float
    latency_p99_ms: float
    throughput_per_s: float  # inferences (batch rows) per second


class ArchiveServing(_Frozen):
    """One archive: loaded under its TargetModel name, checked against its golden outputs, unloaded."""

    target_model: str
    name: str
    format: str
    passed: bool
    # The first line of Triton's error (or of the comparison) when it did not pass.
    error: str | None = None
    # Why it was not checked where the check ran (a TensorRT plan on the CPU stand-in); None when it ran.
    skipped: str | None = None
    load_seconds: float | None = None
    # Device memory the load took (nvidia-smi before/after); None on the CPU stand-in.
    gpu_memory_mib: float | None = None
    # Largest |served - reference| per output over the golden inputs, and the tolerance applied.
    max_abs_error: dict[str, float] = {}
    tolerance: dict[str, float] = {}
    batches: tuple[BatchFigures, ...] = ()

    @model_validator(mode="after")
    def _passed_means_checked(self) -> ArchiveServing:
        # A skipped archive was never loaded: it cannot have passed, whatever the file says.
        if self.passed and (self.skipped is not None or self.error is not None):
            raise ValueError("an archive that was skipped or failed cannot have passed")
        return self


class ServingReport(_Frozen):
    schema_version: int = SERVING_REPORT_SCHEMA_VERSION
    manifest_sha256: str
    # Where it ran: "sagemaker-tritonserver:<tag> on <GPU>, driver <version>" or "local CPU stand-in".
    server: str
    gpu: str | None = None
    archives: tuple[ArchiveServing, ...] = ()

    @property
    def passed(self) -> bool:
        """Every archive that was checked passed (a skipped archive was not checked)."""
        return not self.failures

    @property
    def failures(self) -> tuple[ArchiveServing, ...]:
        return tuple(a for a in self.archives if not a.passed and a.skipped is None)

    @property
    def skipped(self) -> tuple[ArchiveServing, ...]:
        return tuple(a for a in self.archives if a.skipped is not None)

    def find(self, target_model: str) -> ArchiveServing | None:
        return next((a for a in self.archives if a.target_model == target_model), None)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, *, where: str = SERVING_REPORT_FILE_NAME) -> ServingReport:
        """Parse and validate; ServingReportError (one line) on any problem."""
        try:
            return cls.model_validate(load_json(text, where="", max_bytes=MAX_REPORT_BYTES))
        except ValidationError as error:
            raise ServingReportError(f"{where}: {describe_validation_error(error, whole='report')}") from None
        except DocumentError as error:
            raise ServingReportError(f"{where}: {error}") from None


class ServingReportError(UserError, ValueError):
    """A serving report that cannot be read; one line."""

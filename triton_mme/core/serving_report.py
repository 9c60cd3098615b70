"""The serving report: how every archive of a build loaded and answered in the endpoint's own Triton.

Written by the serving check (on the GPU runner in the `sagemaker-tritonserver` image, or offline
against the local CPU Triton) beside the build's manifest, and read by the capacity planner. Figures
carry their unit in the field name; a figure that could not be measured where the check ran is None.

Each archive's entry records the sha256 of the file the check loaded (it loads only the one the manifest
records), and the check signs the whole report with HMAC-SHA256 under a key of the user who ran it
(core.report_key): `add` of a TensorRT plan, which cannot be loaded where it is added, accepts only a report
with this user's signature and the hash of the very file added. Readers that only plan (the capacity
planner) read reports of schema 1, without either.
"""

from __future__ import annotations

import hashlib
import hmac
import json

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from triton_mme.core.bounded import DocumentError, load_json
from triton_mme.core.errors import UserError, describe_validation_error
from triton_mme.core.limits import MAX_REPORT_BYTES
from triton_mme.core.locations import SERVING_REPORT_FILE_NAME as SERVING_REPORT_FILE_NAME

SERVING_REPORT_SCHEMA_VERSION = 2


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
    # The sha256 of the archive file that was checked (schema 2; None in older reports).
    sha256: str | None = None
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
    # HMAC-SHA256 of `signed_content` under the report key of whoever ran the check (schema 2).
    signature: str | None = None

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

    def signed_content(self) -> bytes:
        """What the signature covers: the report without its signature, as canonical JSON."""
        document = self.model_dump(mode="json", exclude={"signature"})
        return json.dumps(document, sort_keys=True, separators=(",", ":")).encode("utf-8")

    def signed(self, key: bytes) -> ServingReport:
        digest = hmac.new(key, self.signed_content(), hashlib.sha256).hexdigest()
        return self.model_copy(update={"signature": digest})

    def signed_with(self, key: bytes) -> bool:
        """The report carries a signature made with `key` over exactly its content."""
        if self.signature is None:
            return False
        return hmac.compare_digest(self.signed(key).signature or "", self.signature)

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

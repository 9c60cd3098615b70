"""Verify an archive as Triton would load it: layout, config round trip, and a real run.

ONNX and TorchScript models are run at batch 1 and at max_batch_size with ONNX Runtime and TorchScript
on this machine and their outputs checked against the config; a TensorRT plan is named as not run
(it runs only with the TensorRT version and GPU that built it).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.core.archive import ArchiveContents, ArchiveError, check_outputs, extract_archive
from triton_mme.core.catalog import Format
from triton_mme.core.errors import first_line
from triton_mme.core.limits import DEFAULT_MAX_UNPACKED_BYTES
from triton_mme.core.samples import sample_inputs
from triton_mme.core.triton_config import ConfigError, render_config


@dataclass
class VerificationReport:
    contents: ArchiveContents
    checks: list[str] = field(default_factory=list)
    # Checks that could not run here (e.g. a TensorRT plan without TensorRT), named honestly.
    not_run: list[str] = field(default_factory=list)


def _batch_sizes(config: pb.ModelConfig) -> list[int]:
    return sorted({1, max(config.max_batch_size, 1)})


def _run_model(contents: ArchiveContents, model_path: Path, report: VerificationReport) -> None:
    from triton_mme.model_build import runtimes

    inputs, outputs = contents.inputs, contents.outputs
    where = contents.path.name
    if contents.format is Format.ONNX:
        session = runtimes.onnx_session(model_path)
        declared = {i.name: runtimes.ORT_TYPES.get(i.type) for i in session.get_inputs()}
        if declared != {s.name: s.datatype for s in inputs}:
            raise ArchiveError(f"{where}: graph inputs {declared} differ from the config's inputs")
        for batch in _batch_sizes(contents.config):
            check_outputs(
                f"{where} (batch {batch})",
                runtimes.run_onnx(session, sample_inputs(inputs, batch)),
                outputs,
                batch,
            )
            report.checks.append(f"onnxruntime run at batch {batch}")
    elif contents.format is Format.TORCHSCRIPT:
        module = runtimes.load_torchscript(model_path)
        for batch in _batch_sizes(contents.config):
            produced = runtimes.run_torchscript(
                module, sample_inputs(inputs, batch), [s.name for s in inputs], [s.name for s in outputs]
            )
            check_outputs(f"{where} (batch {batch})", produced, outputs, batch)
            report.checks.append(f"torchscript run at batch {batch}")
    else:
        report.not_run.append(
            "TensorRT plan not loaded: it runs only with the TensorRT version and GPU that built it"
        )


def verify_archive(
    path: str | Path, *, max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES
) -> VerificationReport:
    """Re-check an archive as Triton would load it; raises ArchiveError on the first problem.

    The archive is checked and unpacked from one open file, and what runs is what was checked.
    """
    with tempfile.TemporaryDirectory(prefix="verify-") as scratch:
        extracted = extract_archive(path, scratch, max_unpacked_bytes=max_unpacked_bytes)
        contents = extracted.contents
        report = VerificationReport(contents, checks=["layout"])
        try:
            render_config(contents.config)
        except ConfigError as error:
            raise ArchiveError(f"{contents.path.name}: {error}") from None
        report.checks.append("config.pbtxt round trip")
        try:
            _run_model(contents, extracted.model_file, report)
        except ArchiveError:
            raise
        except Exception as error:  # a model the runtime rejects: report it in one line
            raise ArchiveError(f"{contents.path.name}: the model does not run: {first_line(error)}") from None
    return report

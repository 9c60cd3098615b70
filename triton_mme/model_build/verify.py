"""Verify an archive as Triton would load it: layout, policy, config round trip, inspection, a real run.

The archive is checked and unpacked from one open file, and its model file inspected (archive_inspection).
ONNX and TorchScript models are then inspected (model_build.inspection) and run at batch 1 and at
max_batch_size with ONNX Runtime and TorchScript, in a child process with a time limit, a memory limit
and no network (model_build.sandbox), and their outputs checked against the config. A TensorRT plan is
named as not run (it runs only with the TensorRT version and GPU that built it).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.archive_inspection import (
    CONFIG_FILE_NAME,
    MODEL_CHECKS,
    ArchiveContents,
    ArchiveError,
    check_outputs,
    inspect_archive,
)
from triton_mme.core.formats import Format
from triton_mme.core.limits import DEFAULT_MAX_UNPACKED_BYTES, MAX_CONFIG_BYTES
from triton_mme.core.naming import MODEL_FILE_NAMES, MODEL_VERSION
from triton_mme.core.samples import sample_inputs
from triton_mme.core.triton_config import ConfigError, parse_config, render_config, tensor_specs
from triton_mme.model_build.sandbox import DEFAULT_LIMITS, NO_MOUNT_VIEW, SandboxLimits, run_checks

TENSORRT_NOT_RUN = "TensorRT plan not loaded: it runs only with the TensorRT version and GPU that built it"


@dataclass
class VerificationReport:
    contents: ArchiveContents
    checks: list[str] = field(default_factory=list)
    # Checks that could not run here (e.g. a TensorRT plan without TensorRT), named honestly.
    not_run: list[str] = field(default_factory=list)


def _batch_sizes(config: pb.ModelConfig) -> list[int]:
    return sorted({1, max(config.max_batch_size, 1)})


def check_unpacked_model(where: str, model_dir: Path) -> list[str]:
    """Inspect, then run, the model of an unpacked (already checked) archive; runs in the sandbox child."""
    from triton_mme.model_build import inspection, runtimes

    with (model_dir / CONFIG_FILE_NAME).open(encoding="utf-8") as stream:
        config = parse_config(stream.read(MAX_CONFIG_BYTES + 1))
    fmt = next(f for f, name in MODEL_FILE_NAMES.items() if (model_dir / MODEL_VERSION / name).is_file())
    model_path = model_dir / MODEL_VERSION / MODEL_FILE_NAMES[fmt]
    inputs, outputs = tensor_specs(config.input), tensor_specs(config.output)
    checks = []
    if fmt is Format.ONNX:
        inspection.check_onnx_model(where, model_path)
        checks.append("onnx operators in standard domains")
        session = runtimes.onnx_session(model_path)
        declared = {i.name: runtimes.ORT_TYPES.get(i.type) for i in session.get_inputs()}
        if declared != {s.name: s.datatype for s in inputs}:
            raise ArchiveError(f"{where}: graph inputs {declared} differ from the config's inputs")
        for batch in _batch_sizes(config):
            check_outputs(
                f"{where} (batch {batch})",
                runtimes.run_onnx(session, sample_inputs(inputs, batch)),
                outputs,
                batch,
            )
            checks.append(f"onnxruntime run at batch {batch}")
    else:
        # load_torchscript_functions runs the code check (archive_inspection) before it loads anything.
        module, functions = runtimes.load_torchscript_functions(model_path)
        inspection.check_torchscript_operators(where, module, functions)
        checks.append("torchscript operators of the exporters only")
        for batch in _batch_sizes(config):
            produced = runtimes.run_torchscript(
                module, sample_inputs(inputs, batch), [s.name for s in inputs], [s.name for s in outputs]
            )
            check_outputs(f"{where} (batch {batch})", produced, outputs, batch)
            checks.append(f"torchscript run at batch {batch}")
    return checks


def verify_archive(
    path: str | Path,
    *,
    max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
    allow_fields: frozenset[str] = frozenset(),
    limits: SandboxLimits = DEFAULT_LIMITS,
    identity: bool = False,
) -> VerificationReport:
    """Re-check an archive as Triton would load it; raises ArchiveError on the first problem.

    The archive is checked and unpacked from one open file, and what runs is what was checked. With
    `identity`, its file name must state its model, format and content hash truly (`add`).
    """
    with tempfile.TemporaryDirectory(prefix="verify-") as scratch:
        # The model check every entry point runs (archive_inspection), then the sandboxed run.
        extracted = inspect_archive(
            path,
            Path(scratch) / "unpacked",
            identity=identity,
            max_unpacked_bytes=max_unpacked_bytes,
            allow_fields=allow_fields,
        )
        contents = extracted.contents
        report = VerificationReport(
            contents, checks=["layout", "archive policy", MODEL_CHECKS[contents.format]]
        )
        try:
            render_config(contents.config)
        except ConfigError as error:
            raise ArchiveError(f"{contents.path.name}: {error}") from None
        report.checks.append("config.pbtxt round trip")
        if contents.format is Format.TENSORRT:
            report.not_run.append(TENSORRT_NOT_RUN)
        else:
            for check in run_checks(contents.path.name, extracted.model_dir, limits):
                (report.not_run if check.startswith(NO_MOUNT_VIEW) else report.checks).append(check)
    return report

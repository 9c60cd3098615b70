"""Rewrite an archive's model directory for the python backend on CPU, changing only what must change.

Tensor names, types, dims, max_batch_size, dynamic batching and warm-up stay as built. The
backend becomes `python` (running `standin_model.py` as `<version>/model.py` beside the archive's own
model.onnx / model.pt), instances run on CPU, GPU-only settings and every parameter the stand-in does not
read are removed. Every change is described.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from triton_mme.core.errors import UserError, quoted

CONFIG_FILE_NAME = "config.pbtxt"
STANDIN_SOURCE = Path(__file__).with_name("standin_model.py")
# Read by standin_model.py when the archive names its model file through default_model_filename.
ARTIFACT_PARAMETER = "local_standin_model_file"
# The parameters standin_model.py reads (ONNX Runtime's session options); every other parameter of an archive
# is dropped: the python backend acts on some of its own (EXECUTION_ENV_PATH unpacks and runs an environment).
STANDIN_PARAMETERS = frozenset(
    {
        "intra_op_thread_count",
        "inter_op_thread_count",
        "execution_mode",
        "enable_mem_arena",
        "enable_mem_pattern",
    }
)
# A model file name: one path component inside the version directory (kept equal to standin_model's).
MODEL_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")

# platform or backend name -> (format, default file, runtime the stand-in uses)
_SERVABLE = {
    "onnxruntime_onnx": ("onnx", "model.onnx", "ONNX Runtime"),
    "onnxruntime": ("onnx", "model.onnx", "ONNX Runtime"),
    "pytorch_libtorch": ("torchscript", "model.pt", "TorchScript"),
    "pytorch": ("torchscript", "model.pt", "TorchScript"),
}
_TENSORRT = {"tensorrt_plan", "tensorrt"}


class StandInError(UserError, ValueError):
    """An archive the CPU stand-in cannot serve; the message is one line."""


class NotRunnableOnCpu(StandInError):
    """A TensorRT archive: its plan runs only on the GPU (and TensorRT version) that built it."""


@dataclass(frozen=True)
class StandIn:
    model_dir: Path
    format: str
    changes: tuple[str, ...]
    # Model instances Triton starts for it: each one a python backend stub process.
    instances: int = 1


def read_config(model_dir: Path) -> mc.ModelConfig:
    path = model_dir / CONFIG_FILE_NAME
    try:
        return text_format.Parse(path.read_text(encoding="utf-8"), mc.ModelConfig())
    except text_format.ParseError as error:
        raise StandInError(f"{path}: not a valid Triton model configuration ({error})") from None


def _serving_kind(config: mc.ModelConfig, where: str) -> tuple[str, str, str]:
    engine = config.platform or config.backend
    if engine in _TENSORRT:
        raise NotRunnableOnCpu(
            f"{where}: a TensorRT plan ({engine}) runs only on the GPU and TensorRT version that built it; "
            "it is not runnable in the local CPU Triton (serve the onnx or torchscript archive instead)"
        )
    if engine not in _SERVABLE:
        allowed = ", ".join(sorted(_SERVABLE))
        raise StandInError(
            f"{where}: platform/backend {engine or '(none)'!r} has no CPU stand-in; allowed: {allowed}"
        )
    return _SERVABLE[engine]


def _move_to_cpu(config: mc.ModelConfig) -> list[str]:
    changes = []
    for index, group in enumerate(config.instance_group):
        if group.kind in (mc.ModelInstanceGroup.KIND_GPU, mc.ModelInstanceGroup.KIND_AUTO):
            before = mc.ModelInstanceGroup.Kind.Name(group.kind)
            gpus = f", gpus {list(group.gpus)} dropped" if group.gpus else ""
            changes.append(
                f"instance_group[{index}].kind: {before} -> KIND_CPU (count {group.count or 1} kept{gpus})"
            )
            group.kind = mc.ModelInstanceGroup.KIND_CPU
            del group.gpus[:]
        if group.secondary_devices:
            changes.append(f"instance_group[{index}].secondary_devices: removed (GPU only)")
            del group.secondary_devices[:]
    return changes


def instance_count(config: mc.ModelConfig) -> int:
    """The instances Triton creates for a CPU model: count 0 and no instance_group both mean one (the
    python backend's default)."""
    return sum(max(group.count, 1) for group in config.instance_group) or 1


def _fit_instances(config: mc.ModelConfig, max_instances: int) -> list[str]:
    """Clamp the instance groups, in order, to `max_instances` in all; groups left with none are removed."""
    total = instance_count(config)
    if total <= max_instances:
        return []
    left, kept, notes = max_instances, 0, []
    for index, group in enumerate(config.instance_group):
        before = max(group.count, 1)
        count = min(before, left)  # once the budget is spent, every later group gets none
        if count == 0:
            notes.append(f"instance_group[{index}] removed")
        elif count < before:
            notes.append(f"instance_group[{index}].count {before} -> {count}")
        if count:
            group.count, kept = count, kept + 1
        left -= count
    del config.instance_group[kept:]
    return [
        f"instance_group: {total} instances -> {max_instances}, the local endpoint's instance budget "
        f"(each instance is a python backend process; {', '.join(notes)})"
    ]


def _drop_gpu_only(config: mc.ModelConfig) -> list[str]:
    changes = []
    accelerators = config.optimization.execution_accelerators.gpu_execution_accelerator
    if accelerators:
        names = ", ".join(a.name for a in accelerators)
        changes.append(
            f"optimization.execution_accelerators.gpu_execution_accelerator: removed {names} (GPU only)"
        )
        del accelerators[:]
    if config.optimization.HasField("cuda"):
        changes.append("optimization.cuda: removed (CUDA graphs and streams are GPU only)")
        config.optimization.ClearField("cuda")
    if config.cc_model_filenames:
        changes.append("cc_model_filenames: removed (per-GPU-architecture files)")
        config.ClearField("cc_model_filenames")
    return changes


def rewrite_config(
    config: mc.ModelConfig, *, where: str, max_instances: int | None = None
) -> tuple[mc.ModelConfig, str, str, list[str]]:
    """A python-backend copy of `config`; returns it with the format, the model file name and the changes.

    With `max_instances`, the instance groups are clamped to that many instances in all."""
    if ARTIFACT_PARAMETER in config.parameters:
        # Only this rewrite sets it, from default_model_filename; an archive setting it itself could
        # point the stand-in at any file (`../../x`).
        raise StandInError(
            f"{where}: parameters.{ARTIFACT_PARAMETER} is reserved for the local stand-in; "
            "allowed: name the model file with default_model_filename"
        )
    model_format, default_file, runtime = _serving_kind(config, where)
    rewritten = mc.ModelConfig()
    rewritten.CopyFrom(config)
    engine = f"platform {config.platform!r}" if config.platform else f"backend {config.backend!r}"
    changes = [f"{engine} -> backend 'python' (runs the archive's own {default_file} with {runtime} on CPU)"]
    rewritten.ClearField("platform")
    rewritten.backend = "python"
    dropped = sorted(set(rewritten.parameters) - STANDIN_PARAMETERS)
    for key in dropped:
        del rewritten.parameters[key]
    if dropped:
        changes.append(f"parameters: {', '.join(dropped)} removed (the stand-in reads only its own)")
    if rewritten.runtime:
        changes.append(f"runtime: {rewritten.runtime!r} removed")
        rewritten.ClearField("runtime")
    model_file = rewritten.default_model_filename or default_file
    if not MODEL_FILE_NAME.fullmatch(model_file):
        raise StandInError(
            f"{where}: default_model_filename {quoted(model_file)} is not a file name in the version "
            "directory; allowed letters, digits, '.', '_' and '-', not starting with '.'"
        )
    if rewritten.default_model_filename:
        # The python backend would read default_model_filename as the name of its Python file.
        rewritten.ClearField("default_model_filename")
        moved = ""
        if model_file != default_file:
            rewritten.parameters[ARTIFACT_PARAMETER].string_value = model_file
            moved = f", the stand-in reads it from parameters.{ARTIFACT_PARAMETER}"
        changes.append(
            f"default_model_filename: {model_file!r} removed (the python backend runs model.py{moved})"
        )
    changes += _move_to_cpu(rewritten)
    if max_instances is not None:
        changes += _fit_instances(rewritten, max_instances)
    changes += _drop_gpu_only(rewritten)
    return rewritten, model_format, model_file, changes


def install_standin(model_dir: Path, *, where: str = "", max_instances: int | None = None) -> StandIn:
    """Rewrite `model_dir` in place (it must be a scratch copy) and add the stand-in's model.py; with
    `max_instances`, at most that many instances."""
    where = where or model_dir.name
    rewritten, model_format, model_file, changes = rewrite_config(
        read_config(model_dir), where=where, max_instances=max_instances
    )
    versions = sorted(p for p in model_dir.iterdir() if p.is_dir() and p.name.isdigit())
    with_model = [v for v in versions if (v / model_file).is_file()]
    if not with_model:
        raise StandInError(
            f"{where}: no <version>/{model_file} in the archive (versions: {[v.name for v in versions]})"
        )
    for version in with_model:
        shutil.copyfile(STANDIN_SOURCE, version / "model.py")
        changes.append(f"{version.name}/model.py: added (the stand-in that runs {version.name}/{model_file})")
    (model_dir / CONFIG_FILE_NAME).write_text(text_format.MessageToString(rewritten), encoding="utf-8")
    return StandIn(
        model_dir=model_dir, format=model_format, changes=tuple(changes), instances=instance_count(rewritten)
    )

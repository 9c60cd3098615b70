"""What an archive may contain: exactly what the build itself writes, checked on Triton's own schema.

An archive is code the endpoint runs. Several fields of Triton's `ModelConfig` make a server load other
files or code (`model_operations.op_library_filename` is dlopen()ed by ONNX Runtime, an
`EXECUTION_ENV_PATH` parameter unpacks a Python environment, accelerator parameters name paths, a
warm-up's `input_data_file` reads a file, `backend`, `runtime`, `model_repository_agents`,
`cc_model_filenames`, ...), and the schema grows with every Triton release. So the policy is an
allowlist, not a list of known dangers: the config.pbtxt is walked field by field
(`google.protobuf.message.ListFields`) and every set field must be one that
`model_build.model_config.build_model_config` writes for that format, every parameter key one the build
writes, with a value of the form the build writes. Anything else is refused in one line naming the field.

`--allow-field PATH` (on `add` and `verify`) admits one more field for an archive built elsewhere, except
the fields that name files or code, which no flag admits (`NEVER_ALLOWED`).

Names are checked too: the model directory is `<model name>-<format>` (`naming.model_directory`), the
config's `name` is that directory, and an archive's file name states the model, the format and the first
16 hex digits of the file's own sha256 (`check_identity`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.archive_inspection.config_bounds import ONNX_PARAMETER_VALUES, parameter_problem
from triton_mme.core.errors import UserError, quoted
from triton_mme.core.formats import Format
from triton_mme.core.naming import ARCHIVE_NAME, CONTENT_HASH_LENGTH, MODEL_NAME

# Field paths (dotted, without indices or map keys) that build_model_config sets for every format.
_COMMON_FIELDS = frozenset(
    {
        "name",
        "platform",
        "max_batch_size",
        "default_model_filename",
        "input.name",
        "input.data_type",
        "input.dims",
        "output.name",
        "output.data_type",
        "output.dims",
        "dynamic_batching.preferred_batch_size",
        "dynamic_batching.max_queue_delay_microseconds",
        "instance_group.kind",
        "instance_group.count",
        "model_warmup.name",
        "model_warmup.batch_size",
        "model_warmup.inputs.data_type",
        "model_warmup.inputs.dims",
        "model_warmup.inputs.random_data",
        "model_warmup.inputs.zero_data",
    }
)
# ONNX Runtime's options (model_build.model_config).
_ONNX_FIELDS = frozenset(
    {
        "optimization.graph.level",
        "parameters.string_value",
        "optimization.execution_accelerators.gpu_execution_accelerator.name",
        "optimization.execution_accelerators.gpu_execution_accelerator.parameters",
    }
)
ALLOWED_FIELDS: dict[Format, frozenset[str]] = {
    Format.ONNX: _COMMON_FIELDS | _ONNX_FIELDS,
    Format.TORCHSCRIPT: _COMMON_FIELDS,
    Format.TENSORRT: _COMMON_FIELDS,
}
# Fields that name files, libraries, backends or code: never admitted, whatever --allow-field says.
NEVER_ALLOWED = frozenset(
    {
        "backend",
        "runtime",
        "platform",
        "default_model_filename",
        "cc_model_filenames",
        "parameters",
        "model_operations",
        "model_repository_agents",
        "ensemble_scheduling",
        "optimization.execution_accelerators",
        "model_warmup.inputs.input_data_file",
    }
)
# Parameter keys the build writes for ONNX Runtime, each an integer in its range (config_bounds).
ONNX_PARAMETERS = frozenset(ONNX_PARAMETER_VALUES)
ACCELERATOR_NAME = "tensorrt"
PRECISIONS = frozenset({"FP16", "FP32"})
_ENGINE_CACHE_DIR = re.compile(rf"[a-z0-9-]{{1,80}}-[0-9a-f]{{{CONTENT_HASH_LENGTH}}}")


class PolicyError(UserError, ValueError):
    """An archive outside what the build writes; the message is one line naming the field."""


def _walk(message: Message, prefix: str = "") -> Iterable[tuple[str, Any]]:
    """(dotted path, value) of every set leaf field; a map of strings is a leaf (its keys are checked
    on their own), a map of messages and a repeated message are walked element by element."""
    for field, value in message.ListFields():
        path = f"{prefix}{field.name}"
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            yield path, value
        elif field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                for item in value.values():
                    yield from _walk(item, f"{path}.")
            else:
                yield path, value
        elif field.label == FieldDescriptor.LABEL_REPEATED:
            for item in value:
                yield from _walk(item, f"{path}.")
        else:
            yield from _walk(value, f"{path}.")


def _admissible(path: str) -> bool:
    return not any(path == never or path.startswith(f"{never}.") for never in NEVER_ALLOWED)


def check_allow_fields(fields: Iterable[str]) -> frozenset[str]:
    """--allow-field values, refused when they name a field that loads files or code."""
    chosen = frozenset(fields)
    for path in sorted(chosen):
        if not _admissible(path):
            raise PolicyError(
                f"--allow-field {quoted(path)}: this field names files or code; no flag admits it "
                f"(never allowed: {', '.join(sorted(NEVER_ALLOWED))})"
            )
    return chosen


def _check_parameters(where: str, fmt: Format, config: pb.ModelConfig) -> None:
    for key, parameter in config.parameters.items():
        if fmt is not Format.ONNX or key not in ONNX_PARAMETERS:
            allowed = ", ".join(sorted(ONNX_PARAMETERS)) if fmt is Format.ONNX else "none"
            raise PolicyError(
                f"{where}: config.pbtxt: parameters key {quoted(key)} is not one the build writes for "
                f"{fmt.value}; allowed: {allowed}"
            )
        problem = parameter_problem(key, parameter.string_value)
        if problem:
            raise PolicyError(f"{where}: config.pbtxt: parameters.{key} {problem}")


def _check_accelerators(where: str, config: pb.ModelConfig, model_dir: str) -> None:
    for accelerator in config.optimization.execution_accelerators.gpu_execution_accelerator:
        if accelerator.name != ACCELERATOR_NAME:
            raise PolicyError(
                f"{where}: config.pbtxt: gpu_execution_accelerator {quoted(accelerator.name)} is not one "
                f"the build writes; allowed: {ACCELERATOR_NAME}"
            )
        for key, value in accelerator.parameters.items():
            problem = _accelerator_problem(key, value, model_dir)
            if problem:
                raise PolicyError(
                    f"{where}: config.pbtxt: gpu_execution_accelerator parameter {quoted(key)} {problem}"
                )


def _accelerator_problem(key: str, value: str, model_dir: str) -> str | None:
    from triton_mme.core.triton_config import TRT_ENGINE_CACHE_ROOT

    if key == "precision_mode":
        return None if value in PRECISIONS else f"{quoted(value)}; allowed {', '.join(sorted(PRECISIONS))}"
    if key == "trt_engine_cache_enable":
        return None if value == "1" else f"{quoted(value)}; allowed '1'"
    if key == "trt_engine_cache_path":
        directory = value.removeprefix(f"{TRT_ENGINE_CACHE_ROOT}/")
        if directory != value and _ENGINE_CACHE_DIR.fullmatch(directory) and directory.startswith(model_dir):
            return None
        return (
            f"{quoted(value)} is not the build's engine cache; allowed "
            f"{TRT_ENGINE_CACHE_ROOT}/{model_dir}-<{CONTENT_HASH_LENGTH} hex digits>"
        )
    return (
        "is not one the build writes; allowed precision_mode, trt_engine_cache_enable, trt_engine_cache_path"
    )


def check_config(
    where: str,
    fmt: Format,
    config: pb.ModelConfig,
    model_dir: str,
    *,
    allow_fields: frozenset[str] = frozenset(),
) -> None:
    """Refuse any field, parameter or name the build would not write for `fmt`, in one line."""
    allowed = ALLOWED_FIELDS[fmt] | check_allow_fields(allow_fields)
    for path, _ in _walk(config):
        if path not in allowed and not any(path.startswith(f"{extra}.") for extra in allow_fields):
            raise PolicyError(
                f"{where}: config.pbtxt: field {path} is not one the build writes for {fmt.value}; "
                "allowed only the build's own fields (docs/input-limits.md; --allow-field for the others "
                "that name no file or code)"
            )
    _check_parameters(where, fmt, config)
    _check_accelerators(where, config, model_dir)
    for warmup in config.model_warmup:
        unknown = sorted(set(warmup.inputs) - {tensor.name for tensor in config.input})
        if unknown:
            raise PolicyError(
                f"{where}: config.pbtxt: model_warmup {quoted(warmup.name)} feeds {unknown}, "
                "which are not inputs of the model"
            )
    check_model_directory(where, fmt, model_dir)
    if config.name and config.name != model_dir:
        raise PolicyError(
            f"{where}: config.pbtxt: name {quoted(config.name)} is not the model directory "
            f"{quoted(model_dir)}"
        )


def check_model_directory(where: str, fmt: Format, model_dir: str) -> None:
    """The directory the build names `<model name>-<format>` (naming.model_directory)."""
    name = model_dir.removesuffix(f"-{fmt.value}")
    if name == model_dir or not MODEL_NAME.match(name):
        raise PolicyError(
            f"{where}: model directory {quoted(model_dir)} is not <model name>-{fmt.value}; "
            f"allowed {MODEL_NAME.allowed}, then -{fmt.value}"
        )


def check_identity(where: str, file_name: str, *, fmt: Format, model_dir: str, sha256: str) -> None:
    """An archive's file name states its model, format and content hash: all three must be true."""
    named = ARCHIVE_NAME.check(file_name, where=where)
    if not sha256.startswith(named["digest"]):
        raise PolicyError(
            f"{where}: the name claims content hash {named['digest']} but the file's sha256 starts with "
            f"{sha256[:CONTENT_HASH_LENGTH]}"
        )
    if named["format"] != fmt.value:
        raise PolicyError(
            f"{where}: the name says {named['format']} but the archive holds a {fmt.value} model"
        )
    if model_dir != f"{named['name']}-{fmt.value}":
        raise PolicyError(
            f"{where}: the name says model {named['name']!r} but the archive's model directory is "
            f"{quoted(model_dir)}; allowed {named['name']}-{fmt.value}"
        )

"""Bounds on every value of an archive's config.pbtxt that the archive policy admits.

The policy (archive_policy) says which fields may be set; this module says how large each may be,
so an archive can ask a server for no more than a catalog entry could: instance counts, batch and
preferred batch sizes, queue delays, tensor and warm-up shapes, warm-up bytes, ONNX Runtime's thread
counts and enumerated options, enum values the schema does not name. The bounds themselves live in
core.limits (docs/input-limits.md lists them); each problem is one line without the archive's name.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from tritonclient.grpc import model_config_pb2 as pb

from triton_mme.core.errors import quoted
from triton_mme.core.limits import (
    MAX_BATCH_SIZE,
    MAX_CONFIG_NAME_LENGTH,
    MAX_INSTANCE_COUNT,
    MAX_MODEL_TENSORS,
    MAX_PREFERRED_BATCH_SIZES,
    MAX_QUEUE_DELAY_MICROSECONDS,
    MAX_THREAD_COUNT,
    MAX_WARMUP_BYTES,
    MAX_WARMUPS,
    sample_elements,
    shape_problem,
)
from triton_mme.core.samples import NUMPY_DTYPES
from triton_mme.core.triton_config import (
    ARENA_EXTEND_STRATEGIES,
    CUDNN_CONV_ALGO_SEARCH,
    EXECUTION_MODES,
    GRAPH_LEVELS,
    datatype_name,
    triton_type,
)

_FLAG = range(2)
# The values of each ONNX Runtime parameter the build writes (model_build.model_config), as
# integers: an enumerated option takes one of its codes, a flag 0 or 1, a thread count the catalog's range.
ONNX_PARAMETER_VALUES: dict[str, range] = {
    "cudnn_conv_algo_search": range(len(CUDNN_CONV_ALGO_SEARCH)),
    "execution_mode": range(len(EXECUTION_MODES)),
    "arena_extend_strategy": range(len(ARENA_EXTEND_STRATEGIES)),
    "enable_mem_pattern": _FLAG,
    "do_copy_in_default_stream": _FLAG,
    "intra_op_thread_count": range(MAX_THREAD_COUNT + 1),
    "inter_op_thread_count": range(MAX_THREAD_COUNT + 1),
}
# Graph optimization levels ONNX Runtime's backend reads; 0 (unset) is "all".
GRAPH_LEVEL_VALUES = frozenset({0, *(level for level in GRAPH_LEVELS.values() if level is not None)})
# The datatypes the build writes (core.samples); the schema accepts any integer as an enum value.
DATATYPES = frozenset(triton_type(name) for name in NUMPY_DTYPES)
# KIND_MODEL lets the model place itself; the build writes KIND_GPU, the local stand-in KIND_CPU.
INSTANCE_KINDS = frozenset(
    {pb.ModelInstanceGroup.KIND_AUTO, pb.ModelInstanceGroup.KIND_GPU, pb.ModelInstanceGroup.KIND_CPU}
)


def _span(values: Iterable[int]) -> str:
    ordered = sorted(values)
    return (
        f"{ordered[0]}..{ordered[-1]}"
        if ordered == list(range(ordered[0], ordered[-1] + 1))
        else (", ".join(map(str, ordered)))
    )


def parameter_problem(key: str, value: str) -> str | None:
    """Why an ONNX Runtime parameter's string value is out of its range; None when it is in range."""
    allowed = ONNX_PARAMETER_VALUES[key]
    # At most 4 digits: every range above fits, and int() never sees a 401-digit string.
    text = value.removeprefix("-")
    if not (text.isascii() and text.isdigit() and len(text) <= 4) or int(value) not in allowed:
        return f"{quoted(value)} is not allowed; allowed {_span(allowed)}"
    return None


def _name_problem(what: str, name: str) -> str | None:
    if not 0 < len(name) <= MAX_CONFIG_NAME_LENGTH or not name.isprintable():
        return (
            f"{what} name {quoted(name)} is not allowed; allowed 1..{MAX_CONFIG_NAME_LENGTH} printable "
            "characters"
        )
    return None


def _datatype_problem(what: str, data_type: int) -> str | None:
    if data_type in DATATYPES:
        return None
    shown = datatype_name(data_type) if data_type in pb.DataType.values() else str(data_type)
    return f"{what} data_type {shown} is not allowed; allowed {', '.join(sorted(NUMPY_DTYPES))}"


def _tensor_problem(config: pb.ModelConfig) -> str | None:
    for kind, tensors in (("input", config.input), ("output", config.output)):
        if len(tensors) > MAX_MODEL_TENSORS:
            return f"{len(tensors)} {kind}s; allowed at most {MAX_MODEL_TENSORS}"
        for tensor in tensors:
            what = f"{kind} {quoted(tensor.name)}"
            problem = _name_problem(kind, tensor.name) or _datatype_problem(what, tensor.data_type)
            if problem:
                return problem
            shape = shape_problem(list(tensor.dims), max_batch_size=config.max_batch_size)
            if shape:
                return f"{what} dims {list(tensor.dims)}: {shape}"
    return None


def _batching_problem(config: pb.ModelConfig) -> str | None:
    batching = config.dynamic_batching
    sizes = list(batching.preferred_batch_size)
    if len(sizes) > MAX_PREFERRED_BATCH_SIZES:
        return (
            f"dynamic_batching.preferred_batch_size has {len(sizes)} entries; allowed at most "
            f"{MAX_PREFERRED_BATCH_SIZES}"
        )
    for size in sizes:
        if not 1 <= size <= config.max_batch_size:
            return (
                f"dynamic_batching.preferred_batch_size {size} is not allowed; allowed "
                f"1..{config.max_batch_size} (max_batch_size)"
            )
    delay = batching.max_queue_delay_microseconds
    if delay > MAX_QUEUE_DELAY_MICROSECONDS:
        return (
            f"dynamic_batching.max_queue_delay_microseconds {delay:,} is not allowed; allowed "
            f"0..{MAX_QUEUE_DELAY_MICROSECONDS:,}"
        )
    return None


def _instance_problem(config: pb.ModelConfig) -> str | None:
    total = 0
    for index, group in enumerate(config.instance_group):
        if group.kind not in INSTANCE_KINDS:
            allowed = ", ".join(pb.ModelInstanceGroup.Kind.Name(kind) for kind in sorted(INSTANCE_KINDS))
            return f"instance_group[{index}].kind {group.kind} is not allowed; allowed {allowed}"
        if not 0 <= group.count <= MAX_INSTANCE_COUNT:
            return (
                f"instance_group[{index}].count {group.count:,} is not allowed; allowed "
                f"1..{MAX_INSTANCE_COUNT} (0 is Triton's default, 1)"
            )
        total += max(group.count, 1)
    if total > MAX_INSTANCE_COUNT:
        return f"instance_group counts add up to {total:,} instances; allowed at most {MAX_INSTANCE_COUNT}"
    return None


def _warmup_problem(config: pb.ModelConfig) -> str | None:
    if len(config.model_warmup) > MAX_WARMUPS:
        return f"{len(config.model_warmup)} model_warmup entries; allowed at most {MAX_WARMUPS}"
    largest_batch = max(config.max_batch_size, 1)
    total_bytes = 0
    for warmup in config.model_warmup:
        what = f"model_warmup {quoted(warmup.name)}"
        problem = _name_problem("model_warmup", warmup.name)
        if problem:
            return problem
        if not 1 <= warmup.batch_size <= largest_batch:
            return (
                f"{what} batch_size {warmup.batch_size:,} is not allowed; allowed 1..{largest_batch} "
                "(max_batch_size)"
            )
        for name, data in warmup.inputs.items():
            problem = _datatype_problem(f"{what} input {quoted(name)}", data.data_type)
            if problem:
                return problem
            dims = list(data.dims)
            shape = shape_problem(dims, max_batch_size=warmup.batch_size)
            if shape:
                return f"{what} input {quoted(name)} dims {dims}: {shape}"
            itemsize = np.dtype(NUMPY_DTYPES[datatype_name(data.data_type)]).itemsize
            total_bytes += sample_elements(dims) * warmup.batch_size * itemsize
    if total_bytes > MAX_WARMUP_BYTES:
        return f"model_warmup data of {total_bytes:,} bytes; allowed at most {MAX_WARMUP_BYTES:,}"
    return None


def config_problem(config: pb.ModelConfig) -> str | None:
    """Why a config.pbtxt asks for more than the bounds allow, in one line; None when it is within them."""
    if not 0 <= config.max_batch_size <= MAX_BATCH_SIZE:
        return f"max_batch_size {config.max_batch_size} is not allowed; allowed 0..{MAX_BATCH_SIZE}"
    level = config.optimization.graph.level
    if level not in GRAPH_LEVEL_VALUES:
        return f"optimization.graph.level {level} is not allowed; allowed {_span(GRAPH_LEVEL_VALUES)}"
    return (
        _tensor_problem(config)
        or _batching_problem(config)
        or _instance_problem(config)
        or _warmup_problem(config)
    )

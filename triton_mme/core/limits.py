"""Every bound the project puts on sizes it reads: catalog shapes, archive configs, archive contents.

Kept in one place so the catalog, the archive reader, `add` and the local server refuse the same things,
and docs/input-limits.md can list them. A shape past these bounds would otherwise fail much later, as an
out-of-memory error in an export, a verification or a model load, instead of as one line up front.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# Largest max_batch_size of a catalog entry or an archive's config.pbtxt.
MAX_BATCH_SIZE = 1024
# Token positions of a text model (RoBERTa and BERT stop at 512; long-context encoders at 8192).
MAX_SEQUENCE_LENGTH = 8192
# Any single dimension of a tensor (a vocabulary of 250,002 tokens fits; [3, 100000, 100000] does not).
MAX_TENSOR_DIM = 1_048_576
# Elements of one sample of one tensor: 512 MiB at FP32.
MAX_SAMPLE_ELEMENTS = 2**27
# Elements of one tensor at max_batch_size, as the build's verification runs it: 1 GiB at FP32.
MAX_BATCH_ELEMENTS = 2**28
# Per-sample dimensions of one tensor: TensorRT's nvinfer1::Dims::MAX_DIMS is 8 with the batch dimension.
MAX_TENSOR_RANK = 7
# Inputs or outputs of one model (the catalog's models have 1 to 3; an exported ONNX model rarely 20).
MAX_MODEL_TENSORS = 64
# A tensor's or a warm-up's name in config.pbtxt (Triton's and ONNX's names are free text).
MAX_CONFIG_NAME_LENGTH = 256

# Values of a config.pbtxt the catalog sets (catalog.schema) and an archive's config may carry
# (archive_inspection.archive_policy, archive_inspection.config_bounds): the catalog's own ranges, so an
# archive can ask for no more than a catalog entry could.
# Model instances per archive, summed over its instance groups (each loads the model once more in GPU memory).
MAX_INSTANCE_COUNT = 16
# ONNX Runtime's intra- and inter-op thread pools (0 = ONNX Runtime's choice, one per core); an
# ml.g5.48xlarge has 192 vCPUs.
MAX_THREAD_COUNT = 256
# The dynamic batcher's wait for more requests: 10 s, a sixth of InvokeEndpoint's 60 s.
MAX_QUEUE_DELAY_MICROSECONDS = 10_000_000
# Entries of dynamic_batching.preferred_batch_size (each one also at most max_batch_size).
MAX_PREFERRED_BATCH_SIZES = 16
# Warm-ups run at every load: the build writes one; each at most max_batch_size (1 without batching).
MAX_WARMUPS = 4
# Bytes Triton allocates for the warm-up data of one archive, all warm-ups and inputs together: the
# largest batch the verification runs (MAX_BATCH_ELEMENTS at FP32).
MAX_WARMUP_BYTES = MAX_BATCH_ELEMENTS * 4

# config.pbtxt is a few kilobytes; it is read into memory whole, so it is bounded on its own.
MAX_CONFIG_BYTES = 1024 * 1024
# Total bytes an archive may unpack to (the sum of its members' sizes). Large enough for a 14 GB
# TorchScript model; change it with --max-unpacked-mib where archives are read (add, serve-local,
# standin) or the `max_unpacked_bytes` argument of triton_mme.archive_inspection.archive.
DEFAULT_MAX_UNPACKED_BYTES = 16 * 1024**3
# An archive holds a model directory, config.pbtxt, a version directory and the model file.
MAX_ARCHIVE_MEMBERS = 8


def sample_elements(dims: Sequence[int]) -> int:
    """Elements of one sample; a dynamic dimension (-1) counts as 1, the least it can be."""
    return math.prod(max(d, 1) for d in dims)


def shape_problem(dims: Sequence[int], *, max_batch_size: int) -> str | None:
    """Why a tensor of these per-sample dims is out of bounds at max_batch_size; None when it fits."""
    if len(dims) > MAX_TENSOR_RANK:
        return f"{len(dims)} dimensions; allowed at most {MAX_TENSOR_RANK} (and the batch dimension)"
    for dim in dims:
        if dim == 0 or dim < -1 or dim > MAX_TENSOR_DIM:
            return f"dimension {dim} is not allowed; allowed 1..{MAX_TENSOR_DIM:,} (or -1 where dynamic)"
    elements = sample_elements(dims)
    if elements > MAX_SAMPLE_ELEMENTS:
        return f"{elements:,} elements per sample; allowed at most {MAX_SAMPLE_ELEMENTS:,}"
    batched = elements * max(max_batch_size, 1)
    if batched > MAX_BATCH_ELEMENTS:
        return (
            f"{batched:,} elements at max_batch_size {max_batch_size}; allowed at most "
            f"{MAX_BATCH_ELEMENTS:,} (lower max_batch_size or the shape)"
        )
    return None


# Documents read whole (core.bounded): nesting depth of any JSON or YAML document (the deepest the
# project writes is under 10), and the size of each kind. A manifest of 10,000 archives is about 12 MB.
MAX_DOCUMENT_DEPTH = 64
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
MAX_REPORT_BYTES = 64 * 1024 * 1024  # serving reports and load-test reports
MAX_CATALOG_BYTES = 1024 * 1024  # models.yaml, with its hf_config mappings
MAX_TRAFFIC_BYTES = 8 * 1024 * 1024  # a traffic file of the capacity planner
MAX_LABELS_BYTES = 16 * 1024 * 1024  # class names (ImageNet-21k's are under 1 MB)
MAX_COMPANION_BYTES = 256 * 1024 * 1024  # any other file beside a manifest (tokenizer, golden data)
MAX_CONTEXT_BYTES = 1024 * 1024  # cdk.json and cdk.context.json (the CDK's own are a few kilobytes)

# Digits of a whole number read from text (a setting, a header, an argument): 18 digits fit an int64,
# and int() never sees the 4,300-digit strings it refuses, nor float() an integer it cannot hold.
MAX_NUMBER_DIGITS = 18
# A JSON reply of a server or an AWS API read whole (Triton's error, the local endpoint's counters, a
# price list item, a stack output, a log event): InvokeEndpoint's replies stop at 6 MiB.
MAX_REPLY_BYTES = 64 * 1024 * 1024
# A Hugging Face config.json or tokenizer_config.json (an id2label of 21,843 classes is under 1 MB).
MAX_HF_CONFIG_BYTES = 1024 * 1024
# A Hugging Face folder's model.safetensors.index.json (a tensor name and a shard name per tensor: a
# 70-billion-parameter model's is under 100 kB) and its tokenizer.json (XLM-RoBERTa's, 250,002 tokens, is
# 17 MB).
MAX_HF_INDEX_BYTES = 16 * 1024 * 1024
MAX_TOKENIZER_BYTES = 64 * 1024 * 1024
# A checkpoint's locked size and parameter count (models.lock.yaml): far above anything the build runner can
# hold (a trillion FP32 parameters are 4 TB), and small enough that no arithmetic on them overflows a float.
MAX_CHECKPOINT_BYTES = 2**50
MAX_CHECKPOINT_PARAMETERS = 10**12
# safetensors' own bound on its JSON header (safetensors/src/tensor.rs, MAX_HEADER_SIZE: 100 MB).
MAX_SAFETENSORS_HEADER_BYTES = 100_000_000
MAX_PRICE_FILE_BYTES = 1024 * 1024  # a price file of the capacity planner

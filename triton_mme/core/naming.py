"""Names of archives, model directories and model files: the TargetModel contract."""

from __future__ import annotations

import re

from triton_mme.core.catalog import Format

# 16 hex digits (64 bits) of the archive's sha256: collisions within one bucket are not a concern,
# and the TargetModel stays short enough to read in logs.
CONTENT_HASH_LENGTH = 16
ARCHIVE_SUFFIX = ".tar.gz"
MODEL_VERSION = "1"

PLATFORMS: dict[Format, str] = {
    Format.ONNX: "onnxruntime_onnx",
    Format.TORCHSCRIPT: "pytorch_libtorch",
    Format.TENSORRT: "tensorrt_plan",
}
MODEL_FILE_NAMES: dict[Format, str] = {
    Format.ONNX: "model.onnx",
    Format.TORCHSCRIPT: "model.pt",
    Format.TENSORRT: "model.plan",
}
ARCHIVE_NAME_PATTERN = re.compile(
    r"^(?P<name>[a-z0-9][a-z0-9-]*)-(?P<format>onnx|torchscript|tensorrt)"
    rf"-(?P<digest>[0-9a-f]{{{CONTENT_HASH_LENGTH}}})\.tar\.gz$"
)


def model_directory(name: str, fmt: Format) -> str:
    """The directory inside the archive, also the model name in config.pbtxt.

    Unique per (model, format) so that several archives can sit side by side in one standalone
    Triton model repository; an MME renames the model to the TargetModel anyway.
    """
    return f"{name}-{fmt.value}"


def archive_file_name(name: str, fmt: Format, sha256_hex: str) -> str:
    return f"{name}-{fmt.value}-{sha256_hex[:CONTENT_HASH_LENGTH]}{ARCHIVE_SUFFIX}"


def format_of_model_file(file_name: str) -> Format | None:
    for fmt, known in MODEL_FILE_NAMES.items():
        if file_name == known:
            return fmt
    return None


# Companion files (class labels, tokenizers) are named after their content like archives, so one file
# serves every archive that shares it and a published name never changes its bytes.
COMPANION_NAME_PATTERN = re.compile(
    rf"^(?P<role>[a-z]+)-(?P<digest>[0-9a-f]{{{CONTENT_HASH_LENGTH}}})\.(?P<suffix>json)$"
)


def companion_file_name(role: str, sha256_hex: str, suffix: str = "json") -> str:
    return f"{role}-{sha256_hex[:CONTENT_HASH_LENGTH]}.{suffix}"

"""Names of models, archives, companion files and shipped configs: the TargetModel contract.

Every name that becomes an object key or a path has one rule here, matched against the whole string
(`fullmatch`: a trailing newline, a slash or an invisible character is never part of a name). The
catalog, the manifest, `add`, the client and the local server all check names with these rules.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from triton_mme.core.errors import UserError, quoted
from triton_mme.core.formats import Format

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


class InvalidName(UserError, ValueError):
    """A name that breaks its rule; the message names where it came from, the value and what is allowed."""


@dataclass(frozen=True)
class NameRule:
    """One kind of name: its pattern (always matched against the whole string) and its rule in words."""

    kind: str
    pattern: re.Pattern[str]
    allowed: str

    def match(self, value: object) -> re.Match[str] | None:
        return self.pattern.fullmatch(value) if isinstance(value, str) else None

    @property
    def refusal(self) -> str:
        return f"not {self.kind}; allowed {self.allowed}"

    def check(self, value: object, *, where: str) -> re.Match[str]:
        """The match, or InvalidName: `<where>: <value> is not a <kind>; allowed <rule>`."""
        matched = self.match(value)
        if matched is None:
            raise InvalidName(f"{where}: {quoted(value)} is not {self.kind}; allowed {self.allowed}")
        return matched


_MODEL = r"[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?"
_DIGEST = rf"[0-9a-f]{{{CONTENT_HASH_LENGTH}}}"

MODEL_NAME = NameRule(
    "a model name",
    re.compile(_MODEL),
    "lowercase letters, digits and hyphens, starting and ending with a letter or digit, "
    "at most 50 characters",
)
ARCHIVE_NAME = NameRule(
    "an archive name",
    re.compile(
        rf"(?P<name>{_MODEL})-(?P<format>{'|'.join(f.value for f in Format)})-(?P<digest>{_DIGEST})"
        + re.escape(ARCHIVE_SUFFIX)
    ),
    f"<model name>-<{'|'.join(f.value for f in Format)}>-<{CONTENT_HASH_LENGTH} lowercase hex digits>"
    f"{ARCHIVE_SUFFIX}",
)
# Companion files (class labels, tokenizers, golden data) are named after their content like archives, so one
# file serves every archive that shares it and a published name never changes its bytes.
COMPANION_ROLE = NameRule("a companion role", re.compile(r"[a-z]{1,32}"), "lowercase letters (e.g. labels)")
# The golden data of an archive (core.golden): inputs and PyTorch's outputs as NumPy arrays.
GOLDEN_ROLE = "golden"
# Every role's file is JSON except these; a role's suffix is part of its rule.
COMPANION_SUFFIXES: dict[str, str] = {GOLDEN_ROLE: "npz"}
COMPANION_NAME = NameRule(
    "a companion file name",
    re.compile(rf"(?P<role>[a-z]{{1,32}})-(?P<digest>{_DIGEST})\.(?P<suffix>json|npz)"),
    f"<role>-<{CONTENT_HASH_LENGTH} lowercase hex digits>.json (.npz for {', '.join(COMPANION_SUFFIXES)})",
)
# The one directory inside an archive: Triton's model directory, unpacked as it is named.
MODEL_DIRECTORY = NameRule(
    "a model directory name",
    re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"),
    "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 128 characters",
)
# A config shipped with the build (sizing/hf_configs/<name>.json): one file name, never a path.
HF_CONFIG_NAME = NameRule(
    "a shipped config name",
    re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"),
    "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100 characters",
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


def companion_suffix(role: str) -> str:
    """The file suffix a companion of this role has: `npz` for golden data, `json` for the others."""
    return COMPANION_SUFFIXES.get(role, "json")


def companion_file_name(role: str, sha256_hex: str) -> str:
    return f"{role}-{sha256_hex[:CONTENT_HASH_LENGTH]}.{companion_suffix(role)}"


# An inference component's name, as SageMaker allows it (CreateInferenceComponent and InvokeEndpoint's
# InferenceComponentName; botocore's sagemaker-runtime service model, shape InferenceComponentHeader: at most
# 63 characters, pattern ^[a-zA-Z0-9]([\-a-zA-Z0-9]*[a-zA-Z0-9])?$). Names are unique per account and region.
INFERENCE_COMPONENT_NAME_LENGTH = 63
INFERENCE_COMPONENT_NAME = NameRule(
    "an inference component name",
    re.compile(rf"[a-zA-Z0-9](?:[-a-zA-Z0-9]{{0,{INFERENCE_COMPONENT_NAME_LENGTH - 2}}}[a-zA-Z0-9])?"),
    "letters, digits and hyphens, starting and ending with a letter or digit, "
    f"at most {INFERENCE_COMPONENT_NAME_LENGTH} characters",
)


# The name of the local stand-in's inference-component endpoint (serve-local), in its components' names.
LOCAL_COMPONENT_ENDPOINT = "local"
# A cut name ends in this many hex digits of the whole name's sha256, so two long names stay distinct.
CUT_NAME_DIGITS = 8


def bounded_name(*parts: str, limit: int = INFERENCE_COMPONENT_NAME_LENGTH) -> str:
    """`parts` joined by hyphens; past `limit`, the head cut and a digest of the whole name appended."""
    name = "-".join(parts)
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:CUT_NAME_DIGITS]
    return f"{name[: limit - CUT_NAME_DIGITS - 1].rstrip('-')}-{digest}"


def inference_component_name(endpoint_name: str, model_name: str) -> str:
    """The inference component of a `placement: dedicated` model on the inference-component endpoint
    `endpoint_name`: `<endpoint>-<model>`, cut to SageMaker's 63 characters with a digest. One stable name per
    endpoint and model (not per archive), so a rebuilt archive updates the component in place, with its
    rolling update and rollback; names are unique per account and region, and the endpoint's name keeps
    two stacks apart. The stack creates it (triton_mme_cdk), the client and the local stand-in call it."""
    return bounded_name(endpoint_name, model_name)

"""Triton's log lines that name a model, read from the default log format.

The SageMaker image's entry point (`docker/sagemaker/serve`, r25.04) sets no `--log-format`, so Triton writes
its default, glog-like format:

    I1201 12:46:23.157547 6220 model_lifecycle.cc:839] "successfully loaded 'resnet50-onnx-....tar.gz'"

(level letter, month and day, time, thread id, source file and line, then the message; Triton 2.4x and later
quote the message and escape its newlines, older releases write it bare: both are read). The lines a model's
life writes, at info level (verbose off), as captured from the local Triton (tests/observability/fixtures/):

- `loading: NAME:VERSION`                         a load starts (model_lifecycle.cc)
- `successfully loaded 'NAME'`                    it ends well (older releases add ` version N`)
- `failed to load 'NAME' version N: REASON`       one version failed, with Triton's reason
- `failed to load 'NAME'`                         the load failed (once per attempt; counted)
- `successfully unloaded 'NAME' version N`        the model left memory (the platform evicts by unloading)
- `Invoking SageMaker TargetModel: NAME`          one invocation (sagemaker_server.cc, every request)
- `All models are stopped, unloading models`      the server stops (server.cc): later unloads are no eviction

The image's entry point turns model namespacing on (`--model-namespacing=true`,
triton_mme/core/triton_container.py), and then Triton's core writes a model as `<repository>::<name>` (core
`model.h`, `ModelIdentifier::str`): on the endpoint `loading: /opt/ml/models/<hash>/model::NAME:1`,
`successfully loaded '/opt/ml/models/<hash>/model::NAME'`, while the SageMaker server's own
`Invoking SageMaker TargetModel: NAME` stays bare. Every name is read without its namespace, so one model's
requests and loads are one model's figures whichever way Triton was started. The namespace is the repository
path, which begins with `/` and, on SageMaker, holds no `::` (`/opt/ml/models/<hash>/model`); a TargetModel
is an S3 key and may: the name is what follows the first `::` after a path.

A line of another shape is not an event; a line that starts like Triton's but cannot be read is `malformed`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

# What Triton's SageMaker server takes for an out-of-memory load error, answering 507
# (src/sagemaker_server.cc, SageMakerMMECheckOOMError, r25.04); any other load error is a 400.
OUT_OF_MEMORY_MARKERS = (
    "CUDA out of memory",
    "CUDA_OUT_OF_MEMORY",
    "Out of memory",
    "Out Of Memory",
    "out of memory",
    "MemoryError",
    "OutOfMemory",
    "OOM",
    "Dst tensor is not initialized",
    "Src tensor is not initialized",
    "CNMEM_STATUS_OUT_OF_MEMORY",
    "CUDNN_STATUS_NOT_INITIALIZED",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUBLAS_STATUS_NOT_INITIALIZED",
    "Failed to allocate memory",
    "failed to allocate memory",
    "No space left on device",
)

# Everything before the message: level, month and day, time, thread id, source file and line.
HEAD = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [\w.\-]+:\d+")
# A line that begins with a level letter and "MMDD " is Triton's: read it or call it malformed.
LEVELS = frozenset("IWEF")


class Kind(StrEnum):
    LOAD_STARTED = "load_started"
    LOADED = "loaded"
    LOAD_FAILED = "load_failed"
    UNLOADED = "unloaded"
    INVOKED = "invoked"
    # The per-version failure line: it carries the reason; the attempt's own line follows and is counted.
    VERSION_FAILED = "version_failed"
    # The server is stopping (server.cc); `read_events` turns the unloads after it into SHUTDOWN_UNLOADED.
    STOPPING = "stopping"
    SHUTDOWN_UNLOADED = "shutdown_unloaded"


MESSAGES: tuple[tuple[Kind, re.Pattern[str]], ...] = (
    (Kind.INVOKED, re.compile(r"Invoking SageMaker TargetModel: (?P<model>\S+)\s*$")),
    (Kind.LOAD_STARTED, re.compile(r"loading: (?P<model>.+):(?P<version>\d+)$")),
    (Kind.LOADED, re.compile(r"successfully loaded '(?P<model>.+?)'(?: version (?P<version>\d+))?$")),
    (Kind.UNLOADED, re.compile(r"successfully unloaded '(?P<model>.+?)' version (?P<version>\d+)$")),
    (
        Kind.VERSION_FAILED,
        re.compile(r"failed to load '(?P<model>.+?)' version (?P<version>\d+): (?P<reason>.*)$", re.S),
    ),
    (Kind.LOAD_FAILED, re.compile(r"failed to load '(?P<model>.+?)'$")),
    (Kind.STOPPING, re.compile(r"All models are stopped, unloading models$")),
)
# The messages above by their first four characters: a line is tried only against those it could be.
BY_START: dict[str, list[tuple[Kind, re.Pattern[str]]]] = {}
for _kind, _pattern in MESSAGES:
    BY_START.setdefault(_pattern.pattern[:4], []).append((_kind, _pattern))


class LogEvent(NamedTuple):
    """One line that names a model (a tuple: a day of log makes millions). `clock` is Triton's
    "MMDD HH:MM:SS.ffffff" (the log has no year); `reason` is set on failed loads, where the per-version
    line gave one."""

    kind: Kind
    model: str
    clock: str
    reason: str = ""

    @property
    def out_of_memory(self) -> bool:
        return any(marker in self.reason for marker in OUT_OF_MEMORY_MARKERS)

    def seconds_of_day(self) -> float:
        hours, minutes, seconds = self.clock.split()[1].split(":")
        return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


@dataclass(frozen=True)
class Malformed:
    """A line with Triton's prefix that does not read as one of its log lines."""

    line: str


def model_name(identifier: str) -> str:
    """A model as Triton's log names it, without the namespace model namespacing puts before it."""
    if identifier[:1] != "/":
        return identifier
    _, separator, name = identifier.partition("::")
    return name if separator and name else identifier


def _unquote(message: str) -> str:
    if len(message) >= 2 and message[0] == message[-1] == '"':
        message = message[1:-1]
        if "\\" in message:
            message = message.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
    return message.strip()


def parse_line(line: str) -> LogEvent | Malformed | None:
    """The event a line records, Malformed for a broken Triton line, None for any other line."""
    # Cheap refusals first: most lines of a busy endpoint are neither Triton's nor about a model.
    if line[:1] not in LEVELS or line[5:6] != " " or not line[1:5].isdigit():
        return None
    line = line.rstrip("\r\n")
    head, bracket, message = line.partition("] ")
    if not bracket:
        return Malformed(line)
    quoted = message[:1] == '"'
    candidates = BY_START.get(message[quoted : quoted + 4])
    if candidates is None:
        return None  # not a model line: its head is not checked
    message = _unquote(message)
    if HEAD.fullmatch(head) is None:
        return Malformed(line)
    clock = head[1:21]
    for kind, pattern in candidates:
        matched = pattern.match(message)
        if matched is None:
            continue
        reason = " ".join(matched["reason"].split()) if kind is Kind.VERSION_FAILED else ""
        return LogEvent(kind, model_name(matched.groupdict().get("model") or ""), clock, reason)
    return None


def read_events(lines: Iterable[str]) -> Iterator[LogEvent | Malformed]:
    """The events of a log, in order; a failed load carries the reason its per-version line gave, and the
    unloads of a stopping server are SHUTDOWN_UNLOADED, not evictions."""
    reasons: dict[str, str] = {}
    stopping = False
    for line in lines:
        parsed = parse_line(line)
        if parsed is None:
            continue
        if isinstance(parsed, LogEvent) and parsed.kind is Kind.STOPPING:
            stopping = True
            continue
        if stopping and isinstance(parsed, LogEvent) and parsed.kind is Kind.UNLOADED:
            parsed = LogEvent(Kind.SHUTDOWN_UNLOADED, parsed.model, parsed.clock)
        if isinstance(parsed, LogEvent) and parsed.kind is Kind.VERSION_FAILED:
            reasons[parsed.model] = parsed.reason
            continue
        if isinstance(parsed, LogEvent) and parsed.kind is Kind.LOAD_FAILED:
            parsed = LogEvent(parsed.kind, parsed.model, parsed.clock, reasons.pop(parsed.model, ""))
        yield parsed

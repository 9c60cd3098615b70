"""Which machine and which library versions produced a result file."""

from __future__ import annotations

import os
import platform
import re
from importlib import metadata
from pathlib import Path
from typing import Any

LIBRARIES = (
    "torch",
    "torchvision",
    "onnx",
    "onnxruntime",
    "onnxruntime-gpu",
    "tensorrt",
    "transformers",
    "tritonclient",
    "numpy",
    "aws-cdk-lib",
    "matplotlib",
)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_name() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return str(torch.cuda.get_device_name(0))


def describe_machine() -> dict[str, Any]:
    cores = os.cpu_count() or 0
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = cores
    return {
        "cpu_model": cpu_model(),
        "logical_cores": cores,
        "usable_cores": usable,
        "memory_gib": _memory_gib(),
        "gpu": gpu_name(),
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def load_average() -> float:
    """The 1-minute load average, rounded: recorded before and after a run on a shared machine."""
    return round(os.getloadavg()[0], 2)


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def machine_slug(machine: dict[str, Any]) -> str:
    """A file-name-safe name such as 'amd-epyc-2c' or 'amd-epyc-16c-nvidia-h200'."""
    parts = [machine["cpu_model"], f"{machine['usable_cores']}c"]
    if machine.get("gpu"):
        parts.append(machine["gpu"])
    slug = re.sub(r"[^a-z0-9]+", "-", " ".join(parts).lower()).strip("-")
    return re.sub(r"-(with|processor|cpu|core)(?=-|$)", "", slug)[:80]

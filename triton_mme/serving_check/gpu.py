"""The GPU as the serving image sees it: is CUDA usable, which GPU and driver, how much memory is in use.

The Triton image carries no PyTorch, so CUDA is checked through the driver API itself (libcuda, as every CUDA
program reaches it, forward-compatibility libraries included when they come first on LD_LIBRARY_PATH), and
memory is read with nvidia-smi, which counts every allocation on the device (Triton's backends allocate
outside any one framework's bookkeeping).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from dataclasses import dataclass
from typing import Protocol

from triton_mme.core.errors import UserError
from triton_mme.core.platform import triton_release_of

NVIDIA_SMI_TIMEOUT_S = 60
# CUDA driver API status codes worth naming (cuda.h, CUresult).
_CUDA_ERRORS = {
    3: "CUDA_ERROR_NOT_INITIALIZED",
    35: "CUDA_ERROR_INSUFFICIENT_DRIVER",
    100: "CUDA_ERROR_NO_DEVICE",
    803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (forward-compatibility libraries that do not fit this driver)",
    804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (forward compatibility is for data-center GPUs only)",
}


class CudaUnusable(UserError):
    """CUDA cannot run the serving image's kernels here; one line."""


class CudaDriver(Protocol):
    """The few driver API calls the check needs (libcuda in production, a fake in tests)."""

    def init(self) -> int: ...
    def version(self) -> int: ...  # e.g. 12090 for CUDA 12.9
    def device_count(self) -> int: ...
    def device_name(self, index: int) -> str: ...


class LibCuda:
    """libcuda.so.1 through ctypes; every call returns the CUresult, 0 meaning success."""

    def __init__(self) -> None:
        try:
            self._lib = ctypes.CDLL("libcuda.so.1")
        except OSError as error:
            raise CudaUnusable(f"CUDA is unusable here: libcuda.so.1 cannot be loaded ({error})") from None

    def _call(self, name: str, *arguments: object) -> int:
        return int(getattr(self._lib, name)(*arguments))

    def init(self) -> int:
        return self._call("cuInit", 0)

    def version(self) -> int:
        value = ctypes.c_int()
        status = self._call("cuDriverGetVersion", ctypes.byref(value))
        return value.value if status == 0 else 0

    def device_count(self) -> int:
        value = ctypes.c_int()
        status = self._call("cuDeviceGetCount", ctypes.byref(value))
        return value.value if status == 0 else 0

    def device_name(self, index: int) -> str:
        device, name = ctypes.c_int(), ctypes.create_string_buffer(256)
        if self._call("cuDeviceGet", ctypes.byref(device), index) != 0:
            return "unknown GPU"
        self._call("cuDeviceGetName", name, len(name), device)
        return name.value.decode(errors="replace") or "unknown GPU"


def cuda_number(version: str) -> int:
    """'12.9.0' -> 12090, the driver API's encoding (1000 * major + 10 * minor)."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return 1000 * major + 10 * minor


def cuda_text(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"


@dataclass(frozen=True)
class CudaReport:
    gpu: str
    driver: str
    cuda: str  # what the driver (with any forward-compatibility libraries) runs
    required: str  # what the image was built for

    def line(self) -> str:
        return (
            f"CUDA ready: {self.gpu}, NVIDIA driver {self.driver}, CUDA {self.cuda} "
            f"(the image needs {self.required})"
        )


def check_cuda(triton_tag: str, driver: CudaDriver | None = None) -> CudaReport:
    """CudaUnusable (one line) unless the driver runs the tag's CUDA on at least one GPU."""
    image = triton_release_of(triton_tag)
    if image is None:
        raise UserError(f"--triton-tag {triton_tag}: not a known Triton image tag")
    kernel_driver = driver_version() or "not found"
    context = f"NVIDIA driver {kernel_driver}, {triton_tag} needs CUDA {image.cuda}"
    api = driver or LibCuda()
    status = api.init()
    if status != 0:
        reason = _CUDA_ERRORS.get(status, f"CUresult {status}")
        raise CudaUnusable(f"CUDA is unusable here ({context}): cuInit failed with {reason}")
    runs = api.version()
    if runs < cuda_number(image.cuda):
        raise CudaUnusable(
            f"CUDA is unusable here ({context}): the driver runs CUDA {cuda_text(runs)} only; it needs a "
            "newer driver, or the image's forward-compatibility libraries first on LD_LIBRARY_PATH"
        )
    if api.device_count() < 1:
        raise CudaUnusable(f"CUDA is unusable here ({context}): no GPU visible")
    return CudaReport(api.device_name(0), kernel_driver, cuda_text(runs), image.cuda)


def _nvidia_smi(*query: str) -> str | None:
    executable = shutil.which("nvidia-smi")
    if executable is None:
        return None
    try:
        result = subprocess.run(
            [executable, *query, "--format=csv,noheader,nounits", "--id=0"],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = result.stdout.strip()
    return text.splitlines()[0].strip() if result.returncode == 0 and text else None


def driver_version() -> str | None:
    return _nvidia_smi("--query-gpu=driver_version")


def gpu_name() -> str | None:
    return _nvidia_smi("--query-gpu=name")


def memory_used_mib() -> float | None:
    """Device memory in use on GPU 0 (all processes), in MiB; None without a working nvidia-smi."""
    value = _nvidia_smi("--query-gpu=memory.used")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None

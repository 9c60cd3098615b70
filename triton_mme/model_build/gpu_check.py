"""Is CUDA usable here? The build runner asks before it exports anything (`triton-mme gpu-check`).

A runner whose driver cannot run the image's CUDA would otherwise fail (or silently fall back to the CPU)
deep inside a long build; this check runs one kernel on the GPU and stops in one line when it cannot.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from triton_mme.core.errors import UserError


@dataclass(frozen=True)
class GpuReport:
    device: str
    compute_capability: str
    driver: str
    torch: str
    torch_cuda: str

    def line(self) -> str:
        return (
            f"CUDA ready: {self.device} (compute capability {self.compute_capability}), NVIDIA driver "
            f"{self.driver}, PyTorch {self.torch} built for CUDA {self.torch_cuda}"
        )


def driver_version() -> str | None:
    """The NVIDIA driver version nvidia-smi reports for GPU 0, or None without a working driver."""
    nvidia_smi = shutil.which("nvidia-smi")
    if nvidia_smi is None:
        return None
    result = subprocess.run(
        [nvidia_smi, "--query-gpu=driver_version", "--format=csv,noheader", "--id=0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    version = result.stdout.strip()
    return version if result.returncode == 0 and version else None


def check_cuda() -> GpuReport:
    """Run one kernel on GPU 0; UserError (one line) when CUDA is unusable."""
    import torch

    driver = driver_version()
    built_for = torch.version.cuda or "none (a CPU-only PyTorch)"
    context = f"NVIDIA driver {driver or 'not found'}, PyTorch {torch.__version__} built for CUDA {built_for}"
    if not torch.cuda.is_available():
        raise UserError(
            f"CUDA is unusable here ({context}): torch.cuda.is_available() is False; the driver must run the "
            "image's CUDA natively or through its forward-compatibility libraries"
        )
    try:
        value = (torch.ones(2, device="cuda") * 2).sum().item()
        torch.cuda.synchronize()
    except RuntimeError as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UserError(f"CUDA is unusable here ({context}): a test kernel failed: {message}") from None
    if value != 4:
        raise UserError(f"CUDA is unusable here ({context}): a test kernel returned {value}, not 4")
    major, minor = torch.cuda.get_device_capability(0)
    return GpuReport(
        device=torch.cuda.get_device_name(0),
        compute_capability=f"{major}.{minor}",
        driver=driver or "unknown",
        torch=str(torch.__version__),
        torch_cuda=built_for,
    )

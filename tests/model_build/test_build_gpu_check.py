"""`triton-mme gpu-check`: one kernel on the GPU before a build, one line when CUDA is unusable."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from triton_mme import cli
from triton_mme.core.errors import UserError
from triton_mme.model_build import gpu_check


def fake_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str, status: int = 0) -> None:
    (tmp_path / "nvidia-smi").write_text(f"#!/bin/sh\necho '{output}'\nexit {status}\n")
    (tmp_path / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))


def test_driver_version_comes_from_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvidia_smi(tmp_path, monkeypatch, "575.51.03")
    assert gpu_check.driver_version() == "575.51.03"


def test_no_driver_without_nvidia_smi_or_when_it_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu_check.driver_version() is None
    fake_nvidia_smi(tmp_path, monkeypatch, "NVIDIA-SMI has failed", status=9)
    assert gpu_check.driver_version() is None


def test_no_cuda_stops_in_one_line_naming_driver_and_pytorch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_check, "driver_version", lambda: "470.256.02")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UserError) as error:
        gpu_check.check_cuda()
    message = str(error.value)
    assert message.startswith(
        f"CUDA is unusable here (NVIDIA driver 470.256.02, PyTorch {torch.__version__} built"
    )
    assert message.endswith(
        "torch.cuda.is_available() is False; the driver must run the image's CUDA natively or through its "
        "forward-compatibility libraries"
    )
    assert "\n" not in message


def test_a_kernel_that_cannot_run_stops_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_check, "driver_version", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)

    def no_kernel(*args: object, **kwargs: object) -> torch.Tensor:
        raise RuntimeError(
            "CUDA error: no kernel image is available for execution on the device\nmore detail"
        )

    monkeypatch.setattr(torch, "ones", no_kernel)
    with pytest.raises(
        UserError, match=r"\(NVIDIA driver not found, .*\): a test kernel failed: CUDA error: no kernel"
    ):
        gpu_check.check_cuda()


def test_the_command_prints_error_in_one_line_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gpu_check, "driver_version", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.main(["gpu-check"]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("error: CUDA is unusable here (NVIDIA driver not found, PyTorch ")
        and err.count("\n") == 1
    )


@pytest.mark.gpu
def test_on_a_gpu_the_check_passes_and_reports_the_device(capsys: pytest.CaptureFixture[str]) -> None:
    report = gpu_check.check_cuda()
    major, minor = torch.cuda.get_device_capability(0)
    assert report.compute_capability == f"{major}.{minor}"
    assert report.device == torch.cuda.get_device_name(0)
    assert report.driver != "unknown", "nvidia-smi reports the driver next to a working GPU"
    assert cli.main(["gpu-check"]) == 0
    assert capsys.readouterr().out.startswith(
        f"CUDA ready: {report.device} (compute capability {major}.{minor})"
    )

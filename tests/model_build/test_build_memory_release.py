"""What keeps a large model's build small: the export traces frozen parameters (same file, no autograd
state) and glibc hands freed blocks back at once."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch
from build_support import entry_of, tiny_cnn

from triton_mme.model_build.allocator import return_freed_memory_eagerly
from triton_mme.model_build.exporters import onnx as onnx_exporter
from triton_mme.model_build.sources import load_model

REPO_ROOT = Path(__file__).resolve().parents[2]
GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
# Frees 100 blocks of 4 MiB after an 8 MiB block has raised glibc's mmap threshold; prints the MiB that
# went back to the system. With glibc's defaults the script imports nothing that is not compiled already: a
# module compiled on import (a fresh clone's first run) leaves the heap so that glibc returns the blocks even
# with its defaults, and the control would say nothing.
FREED_MIB_SCRIPT = textwrap.dedent(
    """
    import os
    import sys
    def resident() -> int:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    if sys.argv[1] == "eager":
        from triton_mme.model_build.allocator import return_freed_memory_eagerly
        return_freed_memory_eagerly()
    block = bytearray(8 << 20)
    del block
    big, pinned = [], []
    for _ in range(100):
        big.append(bytearray(4 << 20))
        pinned.append(bytearray(1024))  # above pymalloc's 512 bytes: from the heap, between the blocks
    before = resident()
    del big
    print((before - resident()) >> 20)
    """
)


def test_parameters_are_frozen_during_the_export_and_restored_after() -> None:
    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    module[1].bias.requires_grad_(False)
    before = [p.requires_grad for p in module.parameters()]
    with onnx_exporter.frozen_parameters(module):
        assert not any(p.requires_grad for p in module.parameters())
    assert [p.requires_grad for p in module.parameters()] == before == [True, True, True, False]


def test_freezing_the_parameters_changes_no_byte_of_the_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = load_model(entry_of(tiny_cnn()))
    frozen = onnx_exporter.export_plain(loaded, tmp_path / "frozen.onnx").read_bytes()
    assert all(p.requires_grad for p in loaded.module.parameters())
    monkeypatch.setattr(onnx_exporter, "frozen_parameters", lambda module: nullcontext())
    traced_with_autograd = onnx_exporter.export_plain(loaded, tmp_path / "autograd.onnx").read_bytes()
    assert frozen == traced_with_autograd


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator only")
def test_freed_blocks_go_back_to_the_system_at_once() -> None:
    def freed_mib(mode: str) -> int:
        run = subprocess.run(
            [sys.executable, "-c", FREED_MIB_SCRIPT, mode],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO_ROOT,
        )
        return int(run.stdout)

    assert return_freed_memory_eagerly() is True
    assert freed_mib("default") < 100  # glibc's defaults keep the freed 400 MiB resident
    assert freed_mib("eager") >= 350


@pytest.mark.skipif(GLIBC, reason="other C libraries only")
def test_other_c_libraries_are_left_as_they_are() -> None:
    assert return_freed_memory_eagerly() is False

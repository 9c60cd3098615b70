"""The model check's child sees a private mount view: only its scratch directory is writable."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from triton_mme.model_build.sandbox import MOUNT_VIEW_MADE

CONFINED = """
import os
from pathlib import Path
from triton_mme.model_build.sandbox import DEFAULT_LIMITS, confine

print(confine(DEFAULT_LIMITS))
Path("inside.txt").write_text("written")
print("inside", Path("inside.txt").read_text())
for target in {targets!r}:
    try:
        Path(target).write_text("escaped")
        print("escaped", target)
    except OSError as error:
        print("refused", target, error.strerror)
print("run holds", sorted(os.listdir("/run")))
"""


def test_a_write_outside_the_scratch_directory_fails_inside_the_sandbox(
    tmp_path: Path, isolated: None
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    victim = tmp_path / "operator-file.txt"
    victim.write_text("original contents")
    targets = [str(victim), str(tmp_path / "new-file.txt"), str(Path.home() / "sandbox-escape.txt")]
    script = textwrap.dedent(CONFINED.format(targets=targets))
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=scratch, capture_output=True, text=True, timeout=120, check=False
    )

    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stderr
    assert lines[0] == MOUNT_VIEW_MADE
    assert "inside written" in lines
    for target in targets:
        assert f"refused {target} Read-only file system" in lines
    assert "run holds []" in lines
    assert victim.read_text() == "original contents"
    assert not (tmp_path / "new-file.txt").exists()
    assert (scratch / "inside.txt").read_text() == "written"


def test_where_the_kernel_refuses_the_mount_view_the_check_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from triton_mme.model_build import mount_view, sandbox

    def refused(_: Path) -> None:
        raise mount_view.MountViewError(1, "unshare(CLONE_NEWNS) failed (Operation not permitted)")

    monkeypatch.setattr(mount_view, "enter_read_only_view", refused)
    line = sandbox._mount_view()
    assert line == (
        f"{sandbox.NO_MOUNT_VIEW} (unshare(CLONE_NEWNS) failed (Operation not permitted)): the model may "
        "write where the user can"
    )

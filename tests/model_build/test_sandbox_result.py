"""The model check runs in a child forked for it (model_build.check_forker) and answers with one line.

Its result line is read through the bounded reader, so a line nested past Python's recursion limit, or one of
the wrong shape, is one line naming the check. One forker serves a process's checks: it holds only the
sandbox's environment, a check past its time is stopped without stopping the next, and a forker that ended
is started again."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from triton_mme.archive_inspection.archive import ArchiveError
from triton_mme.core.formats import Format
from triton_mme.model_build import check_forker, sandbox
from triton_mme.model_build.packaging import write_archive
from triton_mme.model_build.verify import verify_archive

CONFIG = 'name: "m-onnx"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 2\n'
# A well-formed protobuf (ir_version 7 and nothing else): the inspection passes, ONNX Runtime in the child
# refuses it, so its error comes from a child that ran.
NOT_RUNNABLE = b"\x08\x07"
RAN_IN_THE_CHILD = "the model does not run: "
SANDBOX_NAMES = {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE"}


def _archive(tmp_path: Path) -> Path:
    model_file = tmp_path / "model.onnx"
    model_file.write_bytes(NOT_RUNNABLE)
    return write_archive(
        tmp_path / "a", name="m", fmt=Format.ONNX, model_dir="m-onnx", config_text=CONFIG,
        model_file=model_file, model_file_name="model.onnx",
    ).path  # fmt: skip


def _answering(out: bytes, status: int = 0) -> Any:
    def run_forked(request: dict[str, Any], *_: Any) -> int:
        (Path(request["scratch"]) / "stdout").write_bytes(out)
        (Path(request["scratch"]) / "stderr").write_bytes(b"the child's last line\n")
        return status

    return run_forked


@pytest.mark.parametrize(
    "out",
    [b"[" * 200_000 + b"]" * 200_000, b'["checks"]', b'{"checks": "onnx"}', b"{"],
    ids=["deep", "a-list", "checks-not-a-list", "not-json"],
)
def test_a_result_line_the_check_cannot_use_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, out: bytes
) -> None:
    monkeypatch.setattr(check_forker, "run_forked", _answering(b"noise\n" + out + b"\n"))
    with pytest.raises(ArchiveError) as raised:
        sandbox.run_checks("m.tar.gz", tmp_path)
    assert str(raised.value) == "m.tar.gz: the model check failed: the child's last line"


def test_a_result_with_its_checks_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(check_forker, "run_forked", _answering(b'noise\n{"checks": ["ran"]}\n'))
    assert sandbox.run_checks("m.tar.gz", tmp_path) == ["ran"]


def test_a_child_ended_by_a_signal_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(check_forker, "run_forked", _answering(b"", status=-signal.SIGXCPU))
    used_more = r"^m.tar.gz: the model check failed: the model used more than 900 CPU seconds$"
    with pytest.raises(ArchiveError, match=used_more):
        sandbox.run_checks("m.tar.gz", tmp_path)


def _forker_pid() -> int:
    assert check_forker._forker is not None
    return check_forker._forker.process.pid


def test_checks_share_one_forker_that_holds_only_the_sandbox_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-models")
    monkeypatch.setattr(check_forker, "_forker", None)
    archive = _archive(tmp_path)
    pids = []
    for _ in range(2):
        with pytest.raises(ArchiveError, match=RAN_IN_THE_CHILD):
            verify_archive(archive)
        pids.append(_forker_pid())
    environment = Path(f"/proc/{pids[0]}/environ").read_bytes().split(b"\0")
    names = {entry.split(b"=", 1)[0].decode() for entry in environment if entry}
    assert pids[0] == pids[1]
    assert names <= SANDBOX_NAMES | {"OMP_NUM_THREADS"}
    assert b"not-for-models" not in b"".join(environment)


def test_a_check_past_its_time_is_stopped_and_the_next_one_runs(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    stopped = r"the model check did not finish in 0 s; stopped \(--verify-seconds\)"
    with pytest.raises(ArchiveError, match=stopped):
        verify_archive(archive, limits=sandbox.SandboxLimits(time_s=0))
    with pytest.raises(ArchiveError, match=RAN_IN_THE_CHILD):
        verify_archive(archive)


def test_a_forker_that_ended_is_started_again(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    with pytest.raises(ArchiveError, match=RAN_IN_THE_CHILD):
        verify_archive(archive)
    assert check_forker._forker is not None
    ended = check_forker._forker.process
    ended.kill()
    ended.wait()
    with pytest.raises(ArchiveError, match=RAN_IN_THE_CHILD):
        verify_archive(archive)
    assert _forker_pid() != ended.pid


def test_a_forked_copy_of_the_process_leaves_its_forker_alone(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match=RAN_IN_THE_CHILD):
        verify_archive(_archive(tmp_path))
    forker = check_forker._forker
    assert forker is not None
    copy = os.fork()
    if copy == 0:  # what the copy's exit handlers run
        try:
            forker.close()
        finally:
            os._exit(0)
    os.waitpid(copy, 0)
    assert forker.process.poll() is None and forker.home.is_dir()

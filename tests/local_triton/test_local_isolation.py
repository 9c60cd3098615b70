"""The local Triton starts only in a private network namespace, and says in one line why when it cannot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tiny_archives import processes_mentioning

from triton_mme.local_triton import isolation
from triton_mme.local_triton.server import TritonServer, TritonStartError

REPO_ROOT = Path(__file__).resolve().parents[2]
# The launcher as it runs on a machine where unprivileged user namespaces are disabled (AppArmor's
# restriction on Ubuntu 24.04, kernel.unprivileged_userns_clone=0 on Debian): unshare() gets EPERM.
DENIED_LAUNCHER = """
import ctypes, errno, sys
from triton_mme.core import network_isolation
from triton_mme.local_triton import isolation

class DeniedLibc:
    def unshare(self, flags):
        ctypes.set_errno(errno.EPERM)
        return -1

    def prctl(self, *arguments):
        return 0

isolation._libc = DeniedLibc
network_isolation._libc = DeniedLibc
sys.exit(isolation.main(sys.argv[1:]))
"""


def _denied(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", DENIED_LAUNCHER, *arguments],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_check_names_the_reason_and_the_fix_in_one_line() -> None:
    result = _denied("--check")
    assert result.returncode == isolation.ISOLATION_FAILED
    assert result.stderr.strip() == (
        "cannot give the local Triton a private network namespace: unshare(CLONE_NEWUSER|CLONE_NEWNET) "
        "failed (Operation not permitted); unprivileged user namespaces are disabled on this machine "
        "(Ubuntu 23.10+: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0; "
        "Debian: sudo sysctl -w kernel.unprivileged_userns_clone=1)"
    )


def test_without_isolation_tritonserver_is_never_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fail closed: no fallback to a listener on every interface of the machine."""
    launcher_command = isolation.Broker.launcher_command

    def denied(self: isolation.Broker, port: int, command: list[str]) -> list[str]:
        module_arguments = launcher_command(self, port, command)[3:]
        return [sys.executable, "-c", DENIED_LAUNCHER, *module_arguments]

    monkeypatch.setattr(isolation.Broker, "launcher_command", denied)
    monkeypatch.chdir(REPO_ROOT)
    server = TritonServer(workdir=tmp_path)
    with pytest.raises(TritonStartError) as caught:
        server.start(ready_timeout_s=60)
    message = str(caught.value)
    assert message.startswith("cannot give the local Triton a private network namespace: ")
    assert "\n" not in message
    assert not server.is_running()
    assert not [p for p in processes_mentioning(str(tmp_path)) if "bin/tritonserver" in p]

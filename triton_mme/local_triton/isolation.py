"""Run tritonserver in a network namespace of its own, reachable only through connections we hand out.

Triton 2.51's SageMaker listener binds 0.0.0.0 and has no address option, and its `POST /models` loads
any directory (running any python-backend code in it). So the server runs in a private network namespace
made with an unprivileged user namespace (`unshare(CLONE_NEWUSER | CLONE_NEWNET)`): the only interface
there is its own loopback, which no other process on the machine can reach. A small launcher inside the
namespace starts tritonserver and, on request, connects to the listener and passes the connected socket
back over a socketpair (SCM_RIGHTS). The socketpair is inherited, never named in the filesystem, so the
only way in is through the process that started the server. See docs/local-triton-isolation.md.

This module is both sides: `Broker` in the parent, and `python -m triton_mme.local_triton.isolation`
(the launcher) inside the namespace. The launcher imports nothing heavy: unshare() with CLONE_NEWUSER
refuses a process that already runs threads.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence

from triton_mme.core.network_isolation import IsolationError, isolate

__all__ = ["ISOLATION_FAILED", "Broker", "IsolationError", "isolate", "isolation_available", "launch"]

PR_SET_PDEATHSIG = 1
# Exit status of a launcher that could not isolate the server; its one-line reason is on stderr.
ISOLATION_FAILED = 86
REQUEST = b"c"
GRANTED = b"k"
REFUSED = b"e"
CONNECT_TIMEOUT_S = 5.0


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _die_with_parent() -> None:
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=CONNECT_TIMEOUT_S)


def _serve(broker: socket.socket, server: subprocess.Popen[bytes], port: int) -> int:
    """Hand out connections to the server until it exits or the parent goes away."""
    with selectors.DefaultSelector() as selector:
        selector.register(broker, selectors.EVENT_READ)
        while server.poll() is None:
            if not selector.select(timeout=0.5):
                continue
            if broker.recv(1) != REQUEST:  # the parent closed its end: stop the server
                server.send_signal(signal.SIGINT)
                break
            try:
                connection = _connect(port)
            except OSError:
                broker.sendall(REFUSED)
                continue
            with connection:
                socket.send_fds(broker, [GRANTED], [connection.fileno()])
    return server.wait()


def launch(port: int, broker_fd: int, command: Sequence[str]) -> int:
    """The launcher: isolate, start tritonserver inside, serve connections, exit with its status."""
    broker = socket.socket(fileno=broker_fd)
    try:
        isolate()
    except IsolationError as error:
        print(f"error: {error.strerror or error}", file=sys.stderr, flush=True)
        return ISOLATION_FAILED
    server = subprocess.Popen(list(command), stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    # Ctrl-C or a stop from the parent goes to tritonserver, which unloads its models and stops its stubs.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda received, _frame: server.send_signal(received))
    return _serve(broker, server, port)


class Broker:
    """The parent's end: asks the launcher for a connection to the isolated server's listener."""

    def __init__(self) -> None:
        self.parent_end, self.child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._lock = threading.Lock()

    def launcher_command(self, port: int, command: Sequence[str]) -> list[str]:
        return [
            sys.executable,
            "-m",
            __name__,
            f"--port={port}",
            f"--broker-fd={self.child_end.fileno()}",
            "--",
            *command,
        ]

    def started(self) -> None:
        """The launcher holds its own copy of the child end now."""
        self.child_end.close()

    def connection(self, timeout: float | None) -> socket.socket:
        """A new TCP connection to the server's listener (OSError when it does not accept one)."""
        with self._lock:
            self.parent_end.settimeout(CONNECT_TIMEOUT_S + 5)
            self.parent_end.sendall(REQUEST)
            message, fds, _flags, _address = socket.recv_fds(self.parent_end, 1, 1)
        if message == GRANTED and len(fds) == 1:
            connection = socket.socket(fileno=fds[0])
            connection.settimeout(timeout)
            return connection
        for fd in fds:
            os.close(fd)
        if not message:
            raise ConnectionResetError("the local Triton's launcher has exited")
        raise ConnectionRefusedError("the local Triton is not accepting connections yet")

    def close(self) -> None:
        for end in (self.parent_end, self.child_end):
            with contextlib.suppress(OSError):
                end.close()


def isolation_available() -> str | None:
    """None when this machine can run the isolated server; otherwise the one-line reason."""
    result = subprocess.run(
        [sys.executable, "-m", __name__, "--check"], capture_output=True, text=True, timeout=60, check=False
    )
    return None if result.returncode == 0 else (result.stderr.strip() or f"exit status {result.returncode}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__name__}")
    parser.add_argument("--check", action="store_true", help="only check that isolation works here")
    parser.add_argument("--port", type=int)
    parser.add_argument("--broker-fd", type=int)
    parser.add_argument("command", nargs="*")
    args = parser.parse_args(argv)
    if args.check:
        try:
            isolate()
        except IsolationError as error:
            print(error.strerror or error, file=sys.stderr)
            return ISOLATION_FAILED
        return 0
    return launch(args.port, args.broker_fd, args.command)


if __name__ == "__main__":
    sys.exit(main())

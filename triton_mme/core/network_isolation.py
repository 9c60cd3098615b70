"""A private network namespace for the current process: its only interface is its own loopback.

Made with an unprivileged user namespace (`unshare(CLONE_NEWUSER | CLONE_NEWNET)`), so no other process
on the machine can reach it and it can reach nothing. Used by the local Triton's launcher
(local_triton.isolation) and by the child process that runs an archive's model during verification
(model_build.sandbox). The process must be single-threaded: unshare() with CLONE_NEWUSER refuses a
process that already runs threads, so this module imports nothing heavy.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import socket
import struct
from pathlib import Path

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
LOOPBACK_INTERFACE = "lo"


class IsolationError(OSError):
    """The namespace could not be made; the message is one line with the reason and the fix."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _enter_private_network(purpose: str) -> None:
    """Move this (single-threaded) process into new user and network namespaces, keeping its ids."""
    uid, gid = os.getuid(), os.getgid()
    if _libc().unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise IsolationError(
            error,
            f"cannot give {purpose} a private network namespace: unshare(CLONE_NEWUSER|CLONE_NEWNET) "
            f"failed ({os.strerror(error)}); unprivileged user namespaces are disabled on this machine "
            "(Ubuntu 23.10+: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0; "
            "Debian: sudo sysctl -w kernel.unprivileged_userns_clone=1)",
        )
    # The same ids inside as outside, so the files the server reads and writes stay the user's own.
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _bring_up_loopback() -> None:
    """A new network namespace has one interface, loopback, and it starts down."""
    name = LOOPBACK_INTERFACE.encode()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sH14s", name, 0, b"")
        flags = struct.unpack("16sH", fcntl.ioctl(probe, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sH14s", name, flags | IFF_UP, b""))


def _check_isolated() -> None:
    interfaces = sorted(name for _, name in socket.if_nameindex())
    if interfaces != [LOOPBACK_INTERFACE]:
        raise IsolationError(f"the private network namespace has interfaces {interfaces}; expected only lo")


def isolate(purpose: str = "the local Triton") -> None:
    """Enter a private network namespace whose only interface is an up loopback, or raise IsolationError."""
    try:
        _enter_private_network(purpose)
        _bring_up_loopback()
    except IsolationError:
        raise
    except OSError as error:
        raise IsolationError(
            f"cannot set up the network namespace of {purpose} ({error.strerror or error})"
        ) from None
    _check_isolated()

"""A private mount view for the model check's child: only its scratch directory stays writable.

The child (model_build.sandbox) already runs in its own user namespace, where it holds the capabilities
to make a mount namespace of its own (`unshare(CLONE_NEWNS)`). There every mount it inherited is made
private (nothing propagates back to the machine) and remounted read-only (`MS_BIND | MS_REMOUNT |
MS_RDONLY`, keeping the flags the kernel locks in a user namespace: nosuid, nodev, noexec and the atime
flags), except a bind mount of the scratch directory itself; `/run` (the machine's and the user's
sockets: Docker's, D-Bus's, systemd's) is covered by an empty read-only tmpfs.

What the child can still do: read every file the user can read, outside `/run` (the operator allowlist
is what keeps a model from opening one; it has no network to send anything to), connect to a Unix socket
left elsewhere in the file system (for example under /tmp: a read-only mount does not stop connect()),
and write only below its scratch directory, each file at most the sandbox's RLIMIT_FSIZE.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from pathlib import Path

CLONE_NEWNS = 0x00020000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
# statvfs's f_flag bit -> the mount flag the kernel locks in a user namespace (it refuses a remount that
# would clear one of them).
_LOCKED_FLAGS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}
HIDDEN = ("/run",)


class MountViewError(OSError):
    """The private mount view could not be made; the message is one line."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, what: str) -> None:
    encoded = [None if value is None else value.encode() for value in (source, target, fstype)]
    if _libc().mount(encoded[0], encoded[1], encoded[2], ctypes.c_ulong(flags), None) != 0:
        error = ctypes.get_errno()
        raise MountViewError(error, f"cannot {what} {target} ({os.strerror(error)})")


def _unescape(field: str) -> str:
    """/proc/self/mountinfo writes space, tab, newline and backslash as octal escapes (\\040 ...)."""
    return bytes(field, "ascii").decode("unicode_escape")


def mount_points() -> list[str]:
    """Every mount point of this mount namespace, parents before children."""
    lines = Path("/proc/self/mountinfo").read_text(encoding="ascii").splitlines()
    return [_unescape(line.split(" ")[4]) for line in lines]


def _locked_flags(target: str) -> int:
    try:
        present = os.statvfs(target).f_flag
    except OSError:
        return 0
    return sum(flag for bit, flag in _LOCKED_FLAGS.items() if present & bit)


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def enter_read_only_view(scratch: Path) -> None:
    """Enter a private mount namespace in which only `scratch`, then the working directory, is writable
    (and `/run` is empty); MountViewError if any mount cannot be made read-only. Call after the user
    namespace is made."""
    writable = str(scratch.resolve())
    if _libc().unshare(CLONE_NEWNS) != 0:
        error = ctypes.get_errno()
        raise MountViewError(error, f"unshare(CLONE_NEWNS) failed ({os.strerror(error)})")
    _mount(None, "/", None, MS_REC | MS_PRIVATE, "make private")
    # The scratch directory becomes a mount of its own, so the read-only remounts below leave it writable.
    _mount(writable, writable, None, MS_BIND | MS_REC, "bind")
    for hidden in HIDDEN:
        if Path(hidden).is_dir() and not _inside(writable, hidden):
            _mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "cover with a tmpfs")
    for target in mount_points():
        if _inside(target, writable) or not os.path.lexists(target):
            continue  # the scratch directory, or a mount covered by the tmpfs above: nothing to reach
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | _locked_flags(target)
        try:
            _mount(None, target, None, flags, "make read-only")
        except MountViewError as error:
            if error.errno != errno.ENOENT:  # gone since mountinfo was read
                raise
    # A working directory entered before the bind mount still refers to the read-only mount beneath it.
    os.chdir(writable)

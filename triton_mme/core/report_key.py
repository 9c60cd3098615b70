"""The key that signs serving reports: 32 random bytes, hex in a file only its owner may read.

The serving check creates it on first use (mode 0600, in a directory of mode 0700) and signs every report
it writes with it; `add` of a TensorRT plan verifies the report's signature with the same file. A report
signed elsewhere (another machine, another user, the deployment's GPU runner) does not verify here, nor does
one written or edited by hand. Where the file lives is decided by the command line
(`triton_mme.arguments.report_key_file`), never here.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from triton_mme.core.errors import UserError

# Where the command line finds the key file when this is not set: $XDG_CONFIG_HOME (default ~/.config)
# /triton-mme/report-key.
REPORT_KEY_ENV = "TRITON_MME_REPORT_KEY_FILE"
REPORT_KEY_FILE = Path("triton-mme") / "report-key"
_KEY_BYTES = 32
# The file holds 64 hex digits and a newline; more is read only to refuse it.
_MAX_KEY_FILE_BYTES = 4096


class ReportKeyError(UserError):
    """A key file that cannot be used; one line."""


def signing_key(path: Path) -> bytes:
    """The key in `path`, made there first when there is none (the serving check)."""
    if not path.exists():
        _create(path)
    key = report_key(path)
    if key is None:
        raise ReportKeyError(f"{path}: the report key vanished as it was made; run the check again")
    return key


def report_key(path: Path) -> bytes | None:
    """The key in `path`, None when there is none.

    The file is opened once, without following a link (O_NOFOLLOW), and everything after (its kind, owner
    and mode, its bytes) is read from that open file: a link swapped in after a check is never read. Its
    directory must be this user's and writable by no one else, or another user could swap the file itself.
    """
    _check_directory(path.parent)
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:  # the name is a symbolic link
            raise _not_private(path, "a symbolic link") from None
        raise ReportKeyError(f"{path}: cannot read the report key ({error.strerror})") from None
    with os.fdopen(handle, "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_mode & 0o077 or status.st_uid != os.getuid():
            raise _not_private(path, f"mode {stat.S_IMODE(status.st_mode):04o}")
        text = file.read(_MAX_KEY_FILE_BYTES).decode("ascii", errors="replace").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != _KEY_BYTES:
        raise ReportKeyError(f"{path}: not a report key; allowed {2 * _KEY_BYTES} hex digits")
    return key


def _not_private(path: Path, found: str) -> ReportKeyError:
    return ReportKeyError(
        f"{path}: the report key must be a regular file of this user that only they may read ({found}); "
        "allowed mode 0600, or delete it to make a new one"
    )


def _check_directory(directory: Path) -> None:
    try:
        status = directory.stat()
    except FileNotFoundError:
        return  # no directory, so no key yet
    except OSError as error:
        raise ReportKeyError(
            f"{directory}: cannot read the report key's directory ({error.strerror})"
        ) from None
    if status.st_uid != os.getuid() or status.st_mode & 0o022:
        raise ReportKeyError(
            f"{directory}: the report key's directory must be this user's and writable by no one else (owner "
            f"uid {status.st_uid}, mode {stat.S_IMODE(status.st_mode):04o}); allowed: no write permission "
            "for group or others, e.g. mode 0700 (chmod go-w it)"
        )


def _create(path: Path) -> None:
    """Written whole under a scratch name, then linked in place: a check starting at the same moment
    reads either no key or the whole of one, and the first link wins."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}-{secrets.token_hex(8)}")
    try:
        handle = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(handle, "w", encoding="ascii") as file:
            file.write(secrets.token_hex(_KEY_BYTES) + "\n")
        os.link(scratch, path)
    except FileExistsError:  # another check made it first
        pass
    except OSError as error:
        raise ReportKeyError(f"{path}: cannot create the report key ({error.strerror})") from None
    finally:
        scratch.unlink(missing_ok=True)

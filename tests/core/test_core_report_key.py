"""The serving report key is read through one open file that never follows a link, in a directory no one
else may write: a file swapped between a check and the read, or a shared directory, is never trusted."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from triton_mme.core import report_key as module
from triton_mme.core.report_key import ReportKeyError, report_key, signing_key


def test_a_link_swapped_in_after_the_check_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "keys" / "report-key"
    key = signing_key(path)
    attacker = signing_key(tmp_path / "other" / "report-key")
    real_is_regular = stat.S_ISREG
    swapped = []

    def swap_then_check(mode: int) -> bool:
        if not swapped:  # the file just checked becomes a link to another key
            path.unlink()
            os.symlink(tmp_path / "other" / "report-key", path)
            swapped.append(True)
        return real_is_regular(mode)

    monkeypatch.setattr(module.stat, "S_ISREG", swap_then_check)
    assert report_key(path) == key != attacker
    assert swapped


def test_a_key_that_is_a_link_is_refused_in_one_line(tmp_path: Path) -> None:
    signing_key(tmp_path / "real" / "report-key")
    (tmp_path / "keys").mkdir(mode=0o700)
    os.symlink(tmp_path / "real" / "report-key", tmp_path / "keys" / "report-key")
    with pytest.raises(ReportKeyError, match=r"only they may read \(a symbolic link\); allowed mode 0600"):
        report_key(tmp_path / "keys" / "report-key")


def test_a_key_in_a_directory_others_may_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "report-key"
    signing_key(path)
    os.chmod(path.parent, 0o777)
    with pytest.raises(ReportKeyError) as error:
        report_key(path)
    assert "\n" not in str(error.value)
    assert "directory must be this user's and writable by no one else" in str(error.value)
    assert "mode 0777); allowed: no write permission for group or others" in str(error.value)
    os.chmod(path.parent, 0o755)
    assert report_key(path) is not None

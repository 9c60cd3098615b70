"""Which log `triton-mme models --local` reads: the one serve-local wrote into the folder it served."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_mme.cli import main


def test_without_a_value_it_reads_the_log_of_the_default_build_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "build" / "models").mkdir(parents=True)
    assert main(["models", "--local"]) == 1
    assert "--local build/models/local-triton.log: no Triton log there" in capsys.readouterr().err
    (tmp_path / "build" / "models" / "local-triton.log").write_text("")
    assert main(["models", "--local"]) == 0


def test_a_folder_names_its_own_log_and_a_file_is_read_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served = tmp_path / "own-build"
    served.mkdir()
    assert main(["models", "--local", str(served)]) == 1
    assert f"--local {served / 'local-triton.log'}: no Triton log there" in capsys.readouterr().err
    log = tmp_path / "elsewhere.log"
    log.write_text("")
    assert main(["models", "--local", str(log)]) == 0

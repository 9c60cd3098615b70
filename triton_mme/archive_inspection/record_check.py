"""The model check of a built archive against its manifest record: what `add`, `upload` and a build-cache hit
all require before an archive is listed.

model_check inspects the archive (layout, config policy, the model file); its file name must state its
model, format and content hash truly (archive_policy); and the model directory and format inside must be
the ones the record names.
"""

from __future__ import annotations

from pathlib import Path

from triton_mme.archive_inspection.archive_policy import check_identity
from triton_mme.archive_inspection.model_check import check_archive_file
from triton_mme.core.errors import UserError
from triton_mme.core.manifest import ArchiveRecord
from triton_mme.core.naming import model_directory


class RecordMismatchError(UserError, ValueError):
    """An archive that is not what its record says; one line."""


def check_record_archive(path: Path, record: ArchiveRecord) -> None:
    """UserError (one line) unless the archive at `path` passes the model check and holds the record's model
    in the record's format."""
    contents = check_archive_file(path)
    check_identity(
        str(path.name), path.name, fmt=contents.format, model_dir=contents.model_dir, sha256=record.sha256
    )
    if contents.format.value != record.format or contents.model_dir != model_directory(
        record.name, contents.format
    ):
        raise RecordMismatchError(
            f"{path.name}: the manifest records model {record.name!r} in format {record.format} but the "
            f"archive holds {contents.model_dir!r} ({contents.format.value})"
        )

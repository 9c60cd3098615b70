"""What an archive is held to besides its own contents: the name it is served under and the manifest record
that lists it (the `identity` and `record` options of the package's entry, model_check.inspect_archive).

Its file name must state its model, format and content hash truly (archive_policy.check_identity): the
endpoint caches by that name. A record names a file by its sha256 and the model and format inside: the
archive must be that file and hold that model in that format. The sha256 is the one taken from the open file
the archive was read from (archive.py, `hashed`).
"""

from __future__ import annotations

from triton_mme.archive_inspection.archive import ArchiveContents, ArchiveError
from triton_mme.archive_inspection.archive_policy import check_identity
from triton_mme.core.errors import UserError
from triton_mme.core.manifest import ArchiveRecord
from triton_mme.core.naming import CONTENT_HASH_LENGTH, model_directory


def check_held(contents: ArchiveContents, record: ArchiveRecord | None) -> None:
    """ArchiveError (one line) unless the archive's name states what it holds and, with a record, unless it
    is the record's file holding the record's model in the record's format."""
    name, sha256 = contents.path.name, contents.sha256
    if sha256 is None:
        raise ValueError(f"{name}: read without its sha256 (hashed=True); its name cannot be checked")
    if record is not None and sha256 != record.sha256:
        raise ArchiveError(
            f"{name}: sha256 {sha256[:CONTENT_HASH_LENGTH]}... is not the manifest's "
            f"{record.sha256[:CONTENT_HASH_LENGTH]}..."
        )
    try:
        check_identity(name, name, fmt=contents.format, model_dir=contents.model_dir, sha256=sha256)
    except UserError as error:
        raise ArchiveError(str(error)) from None
    if record is not None and (
        contents.format.value != record.format
        or contents.model_dir != model_directory(record.name, contents.format)
    ):
        raise ArchiveError(
            f"{name}: the manifest records model {record.name!r} in format {record.format} but the "
            f"archive holds {contents.model_dir!r} ({contents.format.value})"
        )

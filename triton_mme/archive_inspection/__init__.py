"""Archive inspection: a model archive read, checked and unpacked without running it, as a hostile file.

The entry is `extract_checked_archive(path, dest)`: the archive is read from one open file by a strict tar
block scanner (tar_blocks) that tarfile must agree with, its config.pbtxt held to the fields, parameters and
names the build writes (archive_policy) and to sizes a server could allocate (config_bounds), its unpacked
size bounded before a byte is written (archive), and the unpacked model file inspected (model_check: the
TorchScript code walk of torchscript_code, the ONNX wire-format walk of onnx_check, a plan's first bytes).
`check_archive_file` runs it into a scratch directory, `check_record_archive` also holds the archive to its
manifest record, and `check_identity` holds a file name to the model, format and hash it states.

Every entry point runs it: `add` and `upload` (store), `serve-local` (local_triton), `serving-check`, and the
build's `verify` (model_build), whose sandbox checks the loaded graphs again with the same operator lists.
Other packages import this package only, never its modules (tests/test_package_boundaries.py); it imports
only the core, and neither torch nor boto3.
"""

from triton_mme.archive_inspection.archive import (
    CONFIG_FILE_NAME,
    ArchiveContents,
    ArchiveError,
    ExtractedArchive,
    check_outputs,
    read_archive,
)
from triton_mme.archive_inspection.archive_policy import check_identity
from triton_mme.archive_inspection.model_check import (
    MODEL_CHECKS,
    check_archive_file,
    extract_checked_archive,
)
from triton_mme.archive_inspection.onnx_check import DOMAINS_SHOWN, ONNX_DOMAINS
from triton_mme.archive_inspection.record_check import check_record_archive
from triton_mme.archive_inspection.torchscript_code import TORCHSCRIPT_OPERATORS, scan_torchscript_code

__all__ = [
    "CONFIG_FILE_NAME",
    "DOMAINS_SHOWN",
    "MODEL_CHECKS",
    "ONNX_DOMAINS",
    "TORCHSCRIPT_OPERATORS",
    "ArchiveContents",
    "ArchiveError",
    "ExtractedArchive",
    "check_archive_file",
    "check_identity",
    "check_outputs",
    "check_record_archive",
    "extract_checked_archive",
    "read_archive",
    "scan_torchscript_code",
]

"""Archive inspection: a model archive read, checked and unpacked without running it, as a hostile file.

The entry is `inspect_archive(path, dest=None, *, packed, identity, record)`: the archive is read from one
open file by a strict tar block scanner (tar_blocks) that tarfile must agree with, its config.pbtxt held to
the fields, parameters and names the build writes (archive_policy) and to sizes a server could allocate
(config_bounds), its unpacked size bounded before a byte is written (archive), held where asked to its file
name (model, format and the sha256 of the file read) and to its manifest record (record_check), and the
unpacked model file inspected (model_check: the TorchScript code walk of torchscript_code, the ONNX
wire-format walk of onnx_check, a plan's first bytes). It unpacks under `dest` (what is loaded is what was
inspected), or into a scratch directory it removes, or, with `packed=True`, reads only the layout and the
config.

Every entry point runs it: `add` and `upload` (store), `serve-local` (local_triton), `serving-check`, and the
build's `verify` and cache (model_build), whose sandbox checks the loaded graphs again with the same operator
lists. Store, local_triton and serving_check import the entry and the types of its results and errors, and
nothing else of it; the build also uses the operator lists and the output check. Other packages import this
package only, never its modules (tests/test_package_boundaries.py); it imports only the core, and neither
torch nor boto3.
"""

from triton_mme.archive_inspection.archive import (
    CONFIG_FILE_NAME,
    ArchiveContents,
    ArchiveError,
    ExtractedArchive,
    check_outputs,
)
from triton_mme.archive_inspection.model_check import MODEL_CHECKS, inspect_archive
from triton_mme.archive_inspection.onnx_check import DOMAINS_SHOWN, ONNX_DOMAINS
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
    "check_outputs",
    "inspect_archive",
    "scan_torchscript_code",
]

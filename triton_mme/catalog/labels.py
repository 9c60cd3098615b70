"""`labels:` of a catalog entry: a fine-tune's class names, as a list or a file beside the catalog.

A file (relative to the catalog's folder) is a JSON list of names or a text file with one name a line. It is
read when the catalog is loaded and its names replace the path, so the names (not the path) are part of the
entry's build settings and cache key, and synthesis checks their count against the checkpoint's head.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from triton_mme.core.bounded import DocumentError, load_json
from triton_mme.core.errors import UserError, quoted

MAX_LABELS_FILE_BYTES = 4 * 1024 * 1024
MAX_LABELS = 100_000


class LabelsError(UserError, ValueError):
    """A labels file that cannot be read; one line."""


def read_labels_file(base_dir: Path, text: str, *, where: str) -> tuple[str, ...]:
    """The names in a labels file named by its path relative to the catalog's folder."""
    relative = PurePosixPath(text)
    if relative.is_absolute() or ".." in relative.parts:
        raise LabelsError(f"{where}: labels: {quoted(text)}; allowed: a file inside the catalog's folder")
    path = base_dir / relative
    try:
        with path.open("rb") as stream:
            content = stream.read(MAX_LABELS_FILE_BYTES + 1)
    except OSError as error:
        raise LabelsError(f"{where}: labels: {text}: {error.strerror or error}") from None
    if len(content) > MAX_LABELS_FILE_BYTES:
        raise LabelsError(f"{where}: labels: {text} is larger than {MAX_LABELS_FILE_BYTES:,} bytes")
    names: Any
    if text.endswith(".json"):
        try:
            names = load_json(content, where=text, max_bytes=MAX_LABELS_FILE_BYTES)
        except (DocumentError, ValueError):
            names = None
    else:
        try:
            names = [line.strip() for line in content.decode("utf-8").splitlines() if line.strip()]
        except UnicodeDecodeError:
            names = None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise LabelsError(
            f"{where}: labels: {text} holds no class names; allowed: a JSON list of names (.json) or one "
            "name a line"
        )
    return tuple(names)


def with_label_files_read(models: list[Any], base_dir: Path) -> tuple[list[Any], dict[str, str]]:
    """The raw entries with each `labels:` file replaced by its names, and the files by model name."""
    read: list[Any] = []
    files: dict[str, str] = {}
    for raw in models:
        labels = raw.get("labels") if isinstance(raw, dict) else None
        if isinstance(labels, str):
            where = f"model {quoted(raw.get('name'))}"
            raw = {**raw, "labels": list(read_labels_file(base_dir, labels, where=where))}
            files[str(raw.get("name"))] = labels
        read.append(raw)
    return read, files

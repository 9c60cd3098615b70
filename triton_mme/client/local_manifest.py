"""The manifest of the build folder a local endpoint (serve-local) serves, asked of the endpoint itself: its
`GET /models` names the folder, so `invoke --local` needs no --manifest for another folder than build/models.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from triton_mme.core.bounded import load_json
from triton_mme.core.locations import MANIFEST_FILE_NAME

MAX_MODELS_REPLY_BYTES = 16 * 1024 * 1024


def served_manifest(url: str, *, timeout: float = 5) -> Path | None:
    """`<served folder>/manifest.json` where the endpoint at `url` says what it serves and that file exists;
    None otherwise (an older server, another endpoint, no answer)."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/models", timeout=timeout) as response:
            reply = load_json(
                response.read(MAX_MODELS_REPLY_BYTES + 1), where=url, max_bytes=MAX_MODELS_REPLY_BYTES
            )
    except (urllib.error.URLError, OSError, ValueError):
        return None
    folder = reply.get("modelsDir") if isinstance(reply, dict) else None
    if not isinstance(folder, str):
        return None
    manifest = Path(folder) / MANIFEST_FILE_NAME
    return manifest if manifest.is_file() else None

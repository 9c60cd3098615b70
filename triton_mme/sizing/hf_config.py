"""The Hugging Face architecture of a catalog entry, from the catalog or a config shipped with the project.

Reads JSON only (no PyTorch, no network), so synthesis can use it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triton_mme.catalog import CatalogError, ModelEntry
from triton_mme.core.bounded import read_json
from triton_mme.core.errors import quoted
from triton_mme.core.limits import MAX_HF_CONFIG_BYTES
from triton_mme.core.naming import HF_CONFIG_NAME

HF_CONFIG_DIR = Path(__file__).parent / "hf_configs"


def shipped_hf_configs() -> list[str]:
    return sorted(p.stem for p in HF_CONFIG_DIR.glob("*.json"))


def shipped_hf_config(entry: ModelEntry) -> Path:
    """The shipped config file named by `hf_config` (or the model id's last part), never a file outside
    HF_CONFIG_DIR: the name is one file name by the catalog's rule, and the resolved path (symbolic links
    followed) must still be a file directly in that directory."""
    name = entry.hf_config if isinstance(entry.hf_config, str) else entry.source_id.rsplit("/", 1)[-1]
    directory = HF_CONFIG_DIR.resolve()
    path = (directory / f"{name}.json").resolve() if HF_CONFIG_NAME.match(name) else None
    if path is None or path.parent != directory or not path.is_file():
        shipped = ", ".join(shipped_hf_configs())
        raise CatalogError(
            f"model {quoted(entry.name)}: hf_config: no shipped config {quoted(name)} for weights: random; "
            f"allowed a mapping of config fields or one of: {shipped}"
        )
    return path


def resolve_hf_config(entry: ModelEntry) -> dict[str, Any]:
    """The architecture for a random Hugging Face model: catalog dict, or a shipped config by name.

    Without `hf_config` the shipped config named like the model id's last part is used
    (huggingface:FacebookAI/roberta-large -> roberta-large.json).
    """
    if isinstance(entry.hf_config, dict):
        config = dict(entry.hf_config)
    else:
        config = read_json(shipped_hf_config(entry), max_bytes=MAX_HF_CONFIG_BYTES)
    if "model_type" not in config:
        raise CatalogError(f"model '{entry.name}': hf_config: needs 'model_type' (e.g. roberta)")
    return config

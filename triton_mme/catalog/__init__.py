"""The model catalog, `models.yaml`: its schema and defaults (schema), family entries that expand to one model
per variant (families), class names read from files (labels), the lock file that pins checkpoints and listed
variants (lock), a user's own checkpoints and what of them the build reads (checkpoints, checkpoint_folder),
and the shards a fanned-out build splits it into (shards).

It reads files (YAML, JSON, safetensors headers) and hashes local checkpoints, and imports neither torch nor
boto3, so synthesis, the build, the store and the planner all read it. It imports only the core; the core
does not import it.
"""

from triton_mme.catalog.schema import (
    CHECKPOINT_KIND,
    Catalog,
    CatalogError,
    DedicatedPlacement,
    ModelEntry,
    OnnxRuntimeSettings,
    load_catalog,
    parse_catalog,
)

__all__ = [
    "CHECKPOINT_KIND",
    "Catalog",
    "CatalogError",
    "DedicatedPlacement",
    "ModelEntry",
    "OnnxRuntimeSettings",
    "load_catalog",
    "parse_catalog",
]

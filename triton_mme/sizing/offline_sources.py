"""Whether every catalog `source` resolves, without PyTorch, a GPU or the network, so a typo stops `cdk synth`
instead of the GPU runner.

- `torchvision:<name>` must be a name of torchvision's model registry (`torchvision.models.list_models()`),
  recorded in torchvision_models.txt for the torchvision of requirements-torch.txt: importing torchvision to
  ask it takes seconds and most of a gigabyte (docs/catalog.md, "Sources checked at synth"), which synthesis
  must not. A test compares the file with the installed torchvision. The runner's own torchvision is its
  build image's, which may lack a model added later.
- `huggingface:<id>` must be a Hugging Face Hub repository id; whether it exists on the Hub needs the network
  and is not checked. An `hf_config` name must be a shipped config (hf_configs/), and random weights need
  one: a shipped config named by `hf_config` or by the id's last part, or a mapping with `model_type`.
- `checkpoint:<location>` must be a checkpoint the build can load, with its pinned content
  (sizing.checkpoint_sources).
"""

from __future__ import annotations

import difflib
import re
from functools import cache
from pathlib import Path

from triton_mme.catalog import Catalog, CatalogError, ModelEntry
from triton_mme.catalog.checkpoints import CHECKPOINT_KIND
from triton_mme.core.errors import quoted
from triton_mme.core.formats import Weights
from triton_mme.sizing.checkpoint_sources import resolve_checkpoint
from triton_mme.sizing.hf_config import shipped_hf_configs

PACKAGE_DIR = Path(__file__).parent
TORCHVISION_MODELS_FILE = PACKAGE_DIR / "torchvision_models.txt"
# The Hub's repository id rule (huggingface_hub `validate_repo_id`): an optional namespace and a name, each of
# letters, digits, '-', '_' and '.', neither starting nor ending with '-' or '.', no '--' or '..', at most 96
# characters.
_HUB_PART = r"(?!.*(?:--|\.\.))[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
HUB_REPO_ID = re.compile(rf"(?:{_HUB_PART}/)?{_HUB_PART}")


@cache
def torchvision_models() -> tuple[str, ...]:
    return tuple(TORCHVISION_MODELS_FILE.read_text(encoding="utf-8").split())


def shipped_hf_config_names() -> list[str]:
    return shipped_hf_configs()


def _closest(word: str, choices: list[str] | tuple[str, ...]) -> str:
    match = difflib.get_close_matches(word, choices, n=1)
    return f"did you mean {match[0]}? " if match else ""


def source_problem(entry: ModelEntry) -> str | None:
    """One line naming the entry, its source and what is allowed, or None when the source resolves."""
    where = f"model {quoted(entry.name)}"
    if entry.source_kind == CHECKPOINT_KIND:
        return None  # resolved with its content by check_sources
    if entry.source_kind == "torchvision":
        names = torchvision_models()
        if entry.source_id in names:
            return None
        return (
            f"{where}: source: torchvision has no model {quoted(entry.source_id)}; "
            f"{_closest(entry.source_id, names)}allowed: a name of torchvision.models.list_models() "
            f"({len(names)} names, e.g. resnet50)"
        )
    if not HUB_REPO_ID.fullmatch(entry.source_id):
        return (
            f"{where}: source: {quoted(entry.source_id)} is not a Hugging Face model id; allowed: "
            "[namespace/]name of letters, digits, '-', '_' and '.', e.g. FacebookAI/roberta-large"
        )
    if isinstance(entry.hf_config, dict):
        return None
    shipped = shipped_hf_config_names()
    named = entry.hf_config if isinstance(entry.hf_config, str) else None
    wanted = named or entry.source_id.rsplit("/", 1)[-1]
    if wanted in shipped or (named is None and entry.weights is not Weights.RANDOM):
        return None
    return (
        f"{where}: hf_config: no shipped config {quoted(wanted)}; {_closest(wanted, shipped)}allowed: a "
        f"mapping of config fields or one of: {', '.join(shipped)}"
    )


def check_sources(catalog: Catalog, *, origin: str = "catalog") -> Catalog:
    """The catalog with every checkpoint checked and pinned; CatalogError (one line) for the first entry whose
    source does not resolve offline."""
    for entry in catalog.models:
        problem = source_problem(entry)
        if problem:
            raise CatalogError(f"{origin}: {problem}")
    if not catalog.checkpoints:
        return catalog
    models = []
    for entry in catalog.models:
        if entry.source_kind == CHECKPOINT_KIND:
            try:
                pin = resolve_checkpoint(entry, catalog.base_dir)
            except CatalogError as error:
                raise CatalogError(f"{origin}: {error}") from None
            entry = entry.model_copy()
            entry._pin = pin
        models.append(entry)
    return catalog.model_copy(update={"models": tuple(models)})  # keeps the catalog's folder

"""Family entries: one catalog block that expands to many models, one per checkpoint variant.

```yaml
- family: intent                                  # models intent-acme, intent-globex, ...
  source: checkpoint:checkpoints/intent/{variant}/
  variants: [acme, globex]                        # or `listed`: every folder (or .safetensors file) there
  formats: [onnx]
  max_batch_size: 8
```

A family's other fields are every variant's. `variants: listed` reads the folder that holds `{variant}` at
synthesis when it is local; for S3 (and to pin local ones) `triton-mme lock` lists it into the lock file,
and the lock's list is used. The expansion is sorted by variant, so the same folder gives the same catalog.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from triton_mme.catalog.checkpoints import ONNX_SUFFIX, SAFETENSORS_SUFFIX, CheckpointLocation
from triton_mme.catalog.lock import CatalogLock
from triton_mme.core.errors import UserError, quoted
from triton_mme.core.naming import MODEL_NAME
from triton_mme.core.suggest import did_you_mean

VARIANT = "{variant}"
# One member's own serving: `overrides: {<variant>: {placement: dedicated, dedicated: {...}}}`.
OVERRIDES = "overrides"
OVERRIDE_FIELDS = ("placement", "dedicated")
LISTED = "listed"
VARIANT_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")
MAX_FAMILY_VARIANTS = 10_000


class FamilyError(UserError, ValueError):
    """A family block that cannot expand; the message names the family and what is allowed."""


def is_family(raw: Any) -> bool:
    return isinstance(raw, dict) and "family" in raw


def source_pattern(family: str, raw: dict[str, Any]) -> tuple[str, str, str]:
    """(folder before {variant}, suffix after it, the whole location) of the family's source."""
    source = raw.get("source")
    kind, _, location = source.partition(":") if isinstance(source, str) else ("", "", "")
    if kind != "checkpoint" or location.count(VARIANT) != 1:
        raise FamilyError(
            f"family {quoted(family)}: source: needs one {VARIANT} in a checkpoint location; allowed e.g. "
            f"checkpoint:checkpoints/{family}/{VARIANT}/ or checkpoint:s3://bucket/{family}/{VARIANT}.safetensors"
        )
    before, _, after = location.partition(VARIANT)
    if before and not before.endswith("/"):
        raise FamilyError(f"family {quoted(family)}: source: {VARIANT} must be a whole file or folder name")
    if after not in ("", "/", SAFETENSORS_SUFFIX, ONNX_SUFFIX):
        raise FamilyError(
            f"family {quoted(family)}: source: {VARIANT} must end the location, as a folder "
            f"({VARIANT}/), a state dict ({VARIANT}{SAFETENSORS_SUFFIX}) or an ONNX model "
            f"({VARIANT}{ONNX_SUFFIX})"
        )
    return before, after, location


def list_local_variants(folder: Path, suffix: str, *, family: str | None = None) -> list[str]:
    """The variants a local folder holds: sub-folders for a folder pattern, file stems for a file pattern."""
    if not folder.is_dir():
        where = f"family {quoted(family)}: source: " if family else ""
        missing = folder
        while not missing.parent.is_dir() and missing.parent != missing:
            missing = missing.parent
        siblings = [p.name for p in missing.parent.iterdir() if p.is_dir()] if missing.parent.is_dir() else []
        raise FamilyError(
            f"{where}{folder}: no such folder to list variants in ({missing.name}/ is not in "
            f"{missing.parent}); {did_you_mean(missing.name, siblings)}"
            "allowed: the folder that holds the family's checkpoints"
        )
    if suffix in (SAFETENSORS_SUFFIX, ONNX_SUFFIX):
        return sorted(
            p.name[: -len(suffix)] for p in folder.iterdir() if p.is_file() and p.name.endswith(suffix)
        )
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _variants(family: str, raw: dict[str, Any], base_dir: Path | None, lock: CatalogLock | None) -> list[str]:
    declared = raw.get("variants")
    before, after, _ = source_pattern(family, raw)
    if declared == LISTED:
        locked = lock.families.get(family) if lock else None
        if CheckpointLocation(before).is_s3 or base_dir is None:
            if locked is None:
                raise FamilyError(
                    f"family {quoted(family)}: variants: listed needs the lock file's list for "
                    f"{before or 'this location'}; run `triton-mme lock` (it lists S3 with your credentials)"
                )
            return list(locked)
        listed = list_local_variants((base_dir / before).resolve(), after, family=family)
        if locked is not None and list(locked) != listed:
            added = sorted(set(listed) - set(locked))
            removed = sorted(set(locked) - set(listed))
            raise FamilyError(
                f"family {quoted(family)}: the folder's variants differ from the lock file's (new: "
                f"{', '.join(added[:3]) or 'none'}; gone: {', '.join(removed[:3]) or 'none'}); "
                "run `triton-mme lock`"
            )
        return listed
    if not isinstance(declared, list) or not declared or not all(isinstance(v, str) for v in declared):
        raise FamilyError(
            f"family {quoted(family)}: variants: a non-empty list of names, or {LISTED!r} for every "
            "checkpoint in the folder"
        )
    return list(declared)


def expand_family(
    raw: dict[str, Any], *, base_dir: Path | None, lock: CatalogLock | None
) -> list[dict[str, Any]]:
    """The family's model entries (raw mappings, validated afterwards as any entry), sorted by variant."""
    family = raw.get("family")
    if not isinstance(family, str) or not MODEL_NAME.match(family):
        raise FamilyError(f"family {quoted(family)}: not a name; allowed {MODEL_NAME.allowed}")
    if "name" in raw:
        raise FamilyError(f"family {quoted(family)}: name: a family's models are named <family>-<variant>")
    variants = _variants(family, raw, base_dir, lock)
    if len(variants) > MAX_FAMILY_VARIANTS:
        raise FamilyError(
            f"family {quoted(family)}: {len(variants):,} variants; allowed at most {MAX_FAMILY_VARIANTS:,}"
        )
    if len(set(variants)) != len(variants):
        raise FamilyError(f"family {quoted(family)}: variants: a name is listed twice")
    if not variants:
        raise FamilyError(f"family {quoted(family)}: no variant found; allowed at least one checkpoint")
    fields = {k: v for k, v in raw.items() if k not in ("family", "variants", OVERRIDES)}
    names = variant_model_names(family, variants)
    overrides = variant_overrides(family, raw.get(OVERRIDES), variants)
    return [
        {
            **fields,
            **overrides.get(normalised_variant(variant), {}),
            "name": names[variant],
            "source": fields["source"].replace(VARIANT, variant),
        }
        for variant in sorted(variants)
    ]


def variant_overrides(family: str, overrides: Any, variants: list[str]) -> dict[str, dict[str, Any]]:
    """The family's `overrides:` block by normalised variant: where one member is served (placement,
    dedicated) differs from the family's; FamilyError naming an unknown variant or field."""
    if overrides is None:
        return {}
    if not isinstance(overrides, dict) or not all(isinstance(v, dict) for v in overrides.values()):
        raise FamilyError(
            f"family {quoted(family)}: {OVERRIDES}: a mapping of variant -> fields, e.g. "
            "{plant-7: {placement: dedicated}}"
        )
    known = {normalised_variant(v) for v in variants}
    found: dict[str, dict[str, Any]] = {}
    for key, fields in overrides.items():
        variant = normalised_variant(str(key))
        if variant not in known:
            raise FamilyError(
                f"family {quoted(family)}: {OVERRIDES}: no variant {quoted(key)}; "
                f"{did_you_mean(variant, sorted(known))}allowed: one of its {len(known)} variants"
            )
        extra = sorted(set(fields) - set(OVERRIDE_FIELDS))
        if extra:
            raise FamilyError(
                f"family {quoted(family)}: {OVERRIDES}.{key}: {extra[0]} cannot differ per variant; allowed: "
                f"{', '.join(OVERRIDE_FIELDS)}"
            )
        found[variant] = fields
    return found


def normalised_variant(variant: str) -> str:
    """A file or folder name as a model name's variant part: lowercase, `_` and spaces as `-`."""
    return re.sub(r"[_ ]", "-", variant.lower())


def variant_model_names(family: str, variants: list[str]) -> dict[str, str]:
    """Each variant's model name, `<family>-<normalised variant>`; FamilyError naming every variant that
    gives no valid name and every pair that would give the same one, at once."""
    names: dict[str, str] = {}
    invalid: list[str] = []
    by_name: dict[str, str] = {}
    collisions: list[str] = []
    for variant in sorted(variants):
        name = f"{family}-{normalised_variant(variant)}"
        if not VARIANT_NAME.fullmatch(normalised_variant(variant)) or not MODEL_NAME.match(name):
            invalid.append(quoted(variant))
            continue
        if name in by_name:
            collisions.append(f"{quoted(by_name[name])} and {quoted(variant)} are both {name}")
        by_name[name] = variant
        names[variant] = name
    if invalid:
        raise FamilyError(
            f"family {quoted(family)}: {len(invalid)} variant(s) give no valid model name even "
            f"lowercased with '_' and spaces as '-': {', '.join(invalid[:20])}; allowed: "
            f"<family>-<variant> of {MODEL_NAME.allowed} (rename those checkpoints, or list variants)"
        )
    if collisions:
        raise FamilyError(
            f"family {quoted(family)}: variants that differ only in case, '_' or spaces would share a model "
            f"name: {'; '.join(collisions[:10])}; allowed: one checkpoint per name (rename one of each)"
        )
    return names

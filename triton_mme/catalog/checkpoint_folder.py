"""What the files of a Hugging Face checkpoint folder may say: each one parsed as what its name claims, and
every file it refers to a plain name of the same folder.

The build copies only the folder's listed files (catalog.checkpoints.HF_FOLDER_FILES and the safetensors
weights), hashes them into the pin and loads the copy. A file that names another file would take the load
outside that copy: `model.safetensors.index.json` maps tensors to shard files (a `../` path there is read by
`from_pretrained` wherever it points), and a `*_file` entry of tokenizer_config.json is opened by the
tokenizer as given. So the index may name only shards present beside it, the tokenizer's config no file, and
the tokenizer files must parse as tokenizers (they travel in the build runner's asset: any file renamed
tokenizer.json would ride along otherwise). Reads JSON only, so synthesis, `lock` and the build use it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triton_mme.catalog.checkpoints import HF_TOKENIZER_FILE, HF_WEIGHT_FILE, CheckpointError
from triton_mme.core.bounded import DocumentError, read_json
from triton_mme.core.errors import quoted
from triton_mme.core.limits import MAX_HF_CONFIG_BYTES, MAX_HF_INDEX_BYTES, MAX_TOKENIZER_BYTES

HF_INDEX_FILE = "model.safetensors.index.json"
HF_SINGLE_WEIGHT_FILE = "model.safetensors"
HF_TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
HF_SPECIAL_TOKENS_FILE = "special_tokens_map.json"


def inside(where: str, name: str) -> str:
    """`where` (a folder's location as written, with or without its trailing '/') and a file name in it."""
    return f"{where.rstrip('/')}/{name}"


def _json(path: Path, *, where: str, max_bytes: int) -> Any:
    try:
        return read_json(path, max_bytes=max_bytes, where=where)
    except DocumentError as error:
        raise CheckpointError(str(error)) from None


def weight_files(files: dict[str, Path], *, where: str) -> list[str]:
    """The safetensors files `from_pretrained` reads: model.safetensors alone, or exactly the shards its index
    names, each a plain name present in the folder. CheckpointError (one line) otherwise."""
    present = sorted(name for name in files if HF_WEIGHT_FILE.fullmatch(name))
    if HF_INDEX_FILE not in files:
        if present and present != [HF_SINGLE_WEIGHT_FILE]:
            raise CheckpointError(
                f"{where}: shards {', '.join(present)} without {HF_INDEX_FILE}; allowed: "
                f"{HF_SINGLE_WEIGHT_FILE} alone, or shards with the index save_pretrained writes beside them"
            )
        return present
    index = _json(files[HF_INDEX_FILE], where=inside(where, HF_INDEX_FILE), max_bytes=MAX_HF_INDEX_BYTES)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(
            f"{inside(where, HF_INDEX_FILE)}: not a safetensors index; allowed: a JSON object whose "
            "weight_map maps tensor names to shard files"
        )
    named = set()
    for tensor, shard in weight_map.items():
        if not isinstance(shard, str) or not HF_WEIGHT_FILE.fullmatch(shard) or shard not in files:
            raise CheckpointError(
                f"{inside(where, HF_INDEX_FILE)}: tensor {quoted(tensor)} is mapped to {quoted(shard)}; "
                "allowed: a shard file of this folder by its plain name (model-00001-of-00002.safetensors)"
            )
        named.add(shard)
    unnamed = sorted(set(present) - named)
    if unnamed:
        raise CheckpointError(
            f"{where}: {unnamed[0]} is not named by {HF_INDEX_FILE}; allowed: exactly the shards the index "
            "names (from_pretrained would read one set and the pin cover another)"
        )
    return sorted(named)


def check_tokenizer_files(files: dict[str, Path], *, where: str) -> None:
    """tokenizer.json, tokenizer_config.json and special_tokens_map.json parse as what they claim to be."""
    tokenizer = _json(
        files[HF_TOKENIZER_FILE],
        where=inside(where, HF_TOKENIZER_FILE),
        max_bytes=MAX_TOKENIZER_BYTES,
    )
    if not isinstance(tokenizer, dict) or not isinstance(tokenizer.get("model"), dict):
        raise CheckpointError(
            f"{inside(where, HF_TOKENIZER_FILE)}: not a tokenizer; allowed: a fast tokenizer's "
            "tokenizer.json (a JSON object with its model), as tokenizer.save_pretrained writes it"
        )
    if HF_TOKENIZER_CONFIG_FILE in files:
        _check_tokenizer_config(
            files[HF_TOKENIZER_CONFIG_FILE], where=inside(where, HF_TOKENIZER_CONFIG_FILE)
        )
    if HF_SPECIAL_TOKENS_FILE in files:
        _check_special_tokens(files[HF_SPECIAL_TOKENS_FILE], where=inside(where, HF_SPECIAL_TOKENS_FILE))


def _check_tokenizer_config(path: Path, *, where: str) -> None:
    config = _json(path, where=where, max_bytes=MAX_HF_CONFIG_BYTES)
    if not isinstance(config, dict):
        raise CheckpointError(f"{where}: not a tokenizer config; allowed: a JSON object")
    for key, value in config.items():
        if (key.endswith(("_file", "_files")) and value is not None) or key == "auto_map":
            raise CheckpointError(
                f"{where}: {quoted(key)} names files or code the tokenizer would load from outside the "
                "pinned folder; allowed: a tokenizer config without *_file or auto_map entries"
            )


def _is_token(value: Any) -> bool:
    """A special token as special_tokens_map.json writes it: text, or an AddedToken's fields."""
    return isinstance(value, str) or (isinstance(value, dict) and isinstance(value.get("content"), str))


def _check_special_tokens(path: Path, *, where: str) -> None:
    tokens = _json(path, where=where, max_bytes=MAX_HF_CONFIG_BYTES)
    valid = isinstance(tokens, dict) and all(
        _is_token(value) or (isinstance(value, list) and all(_is_token(item) for item in value))
        for value in tokens.values()
    )
    if not valid:
        raise CheckpointError(
            f"{where}: not a special tokens map; allowed: a JSON object of token names to tokens (text, or "
            "objects with content), or lists of them"
        )

"""Numbers and keys read from files, refused in one line before any arithmetic: safetensors headers the
safetensors library itself refuses, a lock whose counts overflow a float, a YAML key given twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from triton_mme.catalog import CatalogError, load_catalog
from triton_mme.catalog.checkpoints import CheckpointError, parse_safetensors_header
from triton_mme.catalog.lock import LockError, read_lock
from triton_mme.core.bounded import DocumentError, load_yaml


def safetensors(header: dict[str, Any], data: bytes) -> bytes:
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data


def header_text(text: str, data: bytes) -> bytes:
    raw = text.encode()
    return len(raw).to_bytes(8, "little") + raw + data


def one_line_refusal(blob: bytes) -> str:
    with pytest.raises(CheckpointError) as error:
        parse_safetensors_header(blob, where="w.safetensors", file_size=len(blob))
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize(
    "dim", ["1e400", "Infinity", "-Infinity", "NaN", "2.0", "true", '"4"', "18446744073709551616"]
)
def test_a_shape_that_is_not_a_whole_number_is_one_line(dim: str) -> None:
    blob = header_text(f'{{"w": {{"dtype": "F32", "shape": [{dim}], "data_offsets": [0, 16]}}}}', b"\0" * 16)
    assert "tensor 'w' has no valid dtype, shape and byte range" in one_line_refusal(blob)


def test_float_offsets_are_refused() -> None:
    blob = header_text('{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0.0, 16.0]}}', b"\0" * 16)
    assert "tensor 'w' has no valid dtype, shape and byte range" in one_line_refusal(blob)


def test_overlapping_byte_ranges_are_refused() -> None:
    header = {
        "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
        "b": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
    }
    message = one_line_refusal(safetensors(header, b"\0" * 16))
    assert "starts at byte 0, not 16: byte ranges overlap or leave a gap" in message


def test_a_gap_or_trailing_bytes_are_refused() -> None:
    header = {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    assert "its tensors end at byte 16 of 32 data bytes" in one_line_refusal(safetensors(header, b"\0" * 32))


@pytest.mark.parametrize("metadata", [{"format": 1}, ["pt"], "pt"])
def test_metadata_that_is_not_strings_is_refused(metadata: Any) -> None:
    header = {"__metadata__": metadata, "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    assert "its __metadata__ is not a mapping of strings to strings" in one_line_refusal(
        safetensors(header, b"\0" * 16)
    )


def test_what_the_safetensors_library_writes_is_accepted(tmp_path: Path) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"a": np.zeros((2, 3), np.float32), "b": np.ones(5, np.int64)}, tmp_path / "x.safetensors",
              metadata={"format": "pt"})  # fmt: skip
    blob = (tmp_path / "x.safetensors").read_bytes()
    tensors = parse_safetensors_header(blob, where="x", file_size=len(blob))
    assert {name: t.shape for name, t in tensors.items()} == {"a": (2, 3), "b": (5,)}


# --- the lock file ------------------------------------------------------------------------------------------


def lock_text(parameters: str, size: str = "100") -> str:
    return (
        "version: 1\nfamilies: {}\ncheckpoints:\n  own:\n    source: checkpoint:s3://b/own.safetensors\n"
        f"    sha256: {'a' * 64}\n    size_bytes: {size}\n    parameters: {parameters}\n"
    )


@pytest.mark.parametrize(
    ("parameters", "size"),
    [("9" * 401, "100"), ("1e400", "100"), (".inf", "100"), ("100", "9" * 401), ("true", "1")],
)
def test_a_locked_count_past_its_bound_is_one_line(tmp_path: Path, parameters: str, size: str) -> None:
    path = tmp_path / "models.lock.yaml"
    path.write_text(lock_text(parameters, size))
    with pytest.raises(LockError) as error:
        read_lock(path)
    assert "\n" not in str(error.value) and "rewrite it with `triton-mme lock`" in str(error.value)


# --- duplicate keys ----------------------------------------------------------------------------------------


def test_a_key_given_twice_in_the_catalog_names_the_key(tmp_path: Path) -> None:
    catalog = tmp_path / "models.yaml"
    catalog.write_text(
        "models:\n  - name: resnet\n    source: torchvision:resnet18\n    weights: random\n"
        "    formats: [onnx]\n    max_batch_size: 4\n    max_batch_size: 64\n"
    )
    with pytest.raises(CatalogError) as error:
        load_catalog(catalog)
    assert "\n" not in str(error.value)
    assert "line 7: key 'max_batch_size' appears twice in one mapping; allowed once" in str(error.value)


def test_a_checkpoint_pinned_twice_in_the_lock_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "models.lock.yaml"
    text = lock_text("10")
    path.write_text(text + text.split("checkpoints:\n", 1)[1])
    with pytest.raises(LockError) as error:
        read_lock(path)
    assert "key 'own' appears twice in one mapping" in str(error.value)


def test_the_platform_tables_loader_refuses_a_repeated_key() -> None:
    from triton_mme.core.platform_tables import _LOADER

    with pytest.raises(yaml.YAMLError, match="key 'images' appears twice"):
        yaml.load("images: []\nimages: [1]\n", Loader=_LOADER)


def test_distinct_keys_and_nested_mappings_still_load() -> None:
    assert load_yaml("a: {b: 1}\nc: {b: 2}\n", where="x", max_bytes=100) == {"a": {"b": 1}, "c": {"b": 2}}
    with pytest.raises(DocumentError, match="key 'b' appears twice"):
        load_yaml("a: {b: 1, b: 2}\n", where="x", max_bytes=100)

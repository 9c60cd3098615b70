"""`placement:` and `dedicated:` in the catalog: defaults, one-line refusals, and what the build ignores."""

from __future__ import annotations

from typing import Any

import pytest

from triton_mme.catalog import CatalogError, DedicatedPlacement, parse_catalog
from triton_mme.core.formats import Format
from triton_mme.model_build.cache import cache_key

ENTRY: dict[str, Any] = {
    "name": "tiny",
    "source": "torchvision:resnet18",
    "weights": "random",
    "formats": ["onnx", "torchscript"],
    "max_batch_size": 8,
}


def _entry(**fields: Any) -> Any:
    return parse_catalog([{**ENTRY, **fields}]).models[0]


def test_an_entry_is_on_the_multi_model_endpoint_unless_it_says_otherwise() -> None:
    entry = _entry()
    assert entry.placement == "mme"
    assert entry.dedicated is None
    assert entry.dedicated_format is None


def test_a_dedicated_entry_gets_one_copy_of_its_first_format() -> None:
    entry = _entry(placement="dedicated")
    assert entry.dedicated == DedicatedPlacement(format=Format.ONNX, copies=1, min_copies=1)
    assert entry.dedicated.copy_range == (1, 1)
    assert entry.dedicated_format is Format.ONNX


def test_a_dedicated_entry_names_its_format_and_copy_range() -> None:
    entry = _entry(
        placement="dedicated",
        dedicated={"format": "torchscript", "copies": 2, "min_copies": 0, "max_copies": 6},
    )
    assert entry.dedicated_format is Format.TORCHSCRIPT
    assert entry.dedicated.copy_range == (0, 6)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"dedicated": {"copies": 2}}, r"model 'tiny': dedicated: only with placement: dedicated"),
        ({"placement": "edge"}, r"model 'tiny': placement: .*'mme' or 'dedicated'"),
        (
            {"placement": "dedicated", "dedicated": {"format": "tensorrt"}},
            r"dedicated.format: tensorrt is not built for this entry; allowed: onnx, torchscript",
        ),
        (
            {"placement": "dedicated", "dedicated": {"copies": 3, "max_copies": 2}},
            r"dedicated: min_copies 1 <= copies 3 <= max_copies 2 must hold",
        ),
        (
            {"placement": "dedicated", "dedicated": {"copies": 0}},
            r"dedicated.copies: .*greater than or equal to 1",
        ),
        (
            {"placement": "dedicated", "dedicated": {"copies": 65}},
            r"dedicated.copies: .*less than or equal to 64",
        ),
        ({"placement": "dedicated", "dedicated": {"replicas": 2}}, r"dedicated.replicas: "),
    ],
)
def test_a_bad_placement_is_one_line_naming_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(CatalogError, match=message) as caught:
        _entry(**fields)
    assert "\n" not in str(caught.value)


def test_placement_changes_neither_the_entry_digest_nor_the_build_cache_key() -> None:
    shared, dedicated = _entry(), _entry(placement="dedicated", dedicated={"copies": 2, "max_copies": 4})
    assert shared.digest == dedicated.digest
    assert cache_key(shared, Format.ONNX) == cache_key(dedicated, Format.ONNX)
    assert _entry(max_batch_size=4).digest != shared.digest

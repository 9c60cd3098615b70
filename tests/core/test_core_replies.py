"""The largest reply of a model, from the sequence bound its inputs record; rows per request; wording."""

from __future__ import annotations

import pytest

from triton_mme.catalog import CatalogError, load_catalog
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.platform import PLATFORM
from triton_mme.core.replies import (
    reply_bytes_per_sample,
    reply_overhead,
    rows_that_fit,
    sequence_bound,
)
from triton_mme.core.wording import plural, relative_change
from triton_mme.model_build.request_rows import request_row_notes, request_rows

TEXT_INPUTS = tuple(
    TensorSpec(name=n, datatype="INT64", dims=(512,)) for n in ("input_ids", "attention_mask")
)
ROBERTA_OUTPUTS = (
    TensorSpec(name="last_hidden_state", datatype="FP32", dims=(-1, 1024)),
    TensorSpec(name="pooler_output", datatype="FP32", dims=(1024,)),
)


def test_a_dynamic_output_dimension_is_bounded_by_the_text_inputs_length() -> None:
    assert sequence_bound(TEXT_INPUTS) == 512
    assert reply_bytes_per_sample(ROBERTA_OUTPUTS) is None  # unbounded without the sequence bound
    per_row = reply_bytes_per_sample(ROBERTA_OUTPUTS, sequence_bound(TEXT_INPUTS))
    assert per_row == (512 * 1024 + 1024) * 4
    assert rows_that_fit(per_row, 2) == 2
    assert (
        per_row * 3 + reply_overhead(2)
        > PLATFORM.limits.sagemaker_max_payload_bytes.value
        >= per_row * 2 + reply_overhead(2)
    )


def test_image_inputs_and_mixed_lengths_give_no_sequence_bound() -> None:
    image = (TensorSpec(name="input", datatype="FP32", dims=(3, 224, 224)),)
    mixed = (*TEXT_INPUTS, TensorSpec(name="token_type_ids", datatype="INT64", dims=(128,)))
    assert sequence_bound(image) is None and sequence_bound(mixed) is None and sequence_bound(()) is None


def test_the_default_catalogs_text_model_is_clamped_in_one_line_naming_the_rows_that_fit() -> None:
    (note,) = request_row_notes(load_catalog("models.yaml"))
    assert note == (
        "model 'roberta-large': a request carries at most 2 of its max_batch_size 32 rows: the reply to 3 "
        "would be 6,304,384 bytes, over InvokeEndpoint's 6 MiB reply limit (Triton still batches up to 32 "
        "rows across requests)"
    )
    assert request_row_notes(load_catalog("models.yaml"), only="resnet50") == []


def test_a_sequence_whose_single_row_cannot_come_back_is_refused() -> None:
    assert request_rows("small", max_batch_size=4, hidden_size=32, sequence_length=16) == (4, None)
    with pytest.raises(
        CatalogError, match=r"model 'big': one row's reply is 33,559,168 bytes .* at most 1534$"
    ):
        request_rows("big", max_batch_size=4, hidden_size=1024, sequence_length=8192)


@pytest.mark.parametrize(
    ("count", "expected"), [(0, "0 archives"), (1, "1 archive"), (2, "2 archives"), (1200, "1,200 archives")]
)
def test_counts_take_the_right_number(count: int, expected: str) -> None:
    assert plural(count, "archive") == expected


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        (1.004, "costs the same"),
        (0.996, "costs the same"),
        (1.23, "costs 23% more"),
        (0.5, "saves 50%"),
    ],
)
def test_a_change_is_never_signed_and_never_minus_zero(ratio: float, expected: str) -> None:
    assert relative_change(ratio, more="costs {} more", less="saves {}", same="costs the same") == expected

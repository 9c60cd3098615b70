"""An error about an unknown name stays one short line however many names exist: up to five are listed, past
that the closest five and the count."""

from __future__ import annotations

import pytest

from benchmarks.capacity_inputs import synthetic_manifest
from triton_mme.core.suggest import known_names


def test_a_few_names_are_all_listed_with_the_closest_first_offered() -> None:
    assert known_names("resnt50", ["resnet50", "bert"]) == "did you mean resnet50? known: bert, resnet50"
    assert known_names("x", []) == "known: none"


def test_ten_thousand_names_give_the_closest_few_and_the_count() -> None:
    names = [f"fine-tune-{i:05d}" for i in range(10_000)]
    message = known_names("fine-tune-01234x", names)
    assert message.startswith("did you mean fine-tune-01234? 10,000 known; closest: fine-tune-01234")
    assert message.count(",") <= 5 and len(message) < 200


def test_a_name_close_to_nothing_still_gets_the_count_and_a_few_names() -> None:
    names = [f"m{i:04d}" for i in range(2000)]
    assert known_names("zzz", names) == "2,000 known; first: m0000, m0001, m0002, m0003, m0004"
    assert known_names("m1", names) == "2,000 known; closest: m1000, m1001, m1002, m1003, m1004"


def test_an_unknown_model_in_a_ten_thousand_model_manifest_is_one_short_line() -> None:
    manifest = synthetic_manifest(10_000)
    with pytest.raises(KeyError) as caught:
        manifest.find("m12345")
    assert "10,000 known; closest: " in caught.value.args[0] and len(caught.value.args[0]) < 200
    with pytest.raises(KeyError) as caught:
        manifest.find("m0001", "tensorrt")
    assert caught.value.args[0].endswith("in format 'tensorrt' in the manifest; formats of 'm0001': onnx")

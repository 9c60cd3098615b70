"""The build-time estimate: its factors reproduce the measurements they come from, and shards are balanced and
deterministic."""

from __future__ import annotations

import pytest

from triton_mme.catalog import load_catalog
from triton_mme.core.formats import Format
from triton_mme.sizing.build_memory import TORCHVISION_PARAMETERS
from triton_mme.sizing.build_time import balanced_shards, estimate, wall_seconds


def test_the_factors_reproduce_the_recorded_build_benchmark() -> None:
    # benchmarks/results/build/2026-12-01-amd-epyc-2c.md: resnet50 onnx 86.8 s, torchscript 110.4 s,
    # roberta-large onnx 692.9 s (random weights, no TensorRT).
    times = estimate(load_catalog("models.yaml"), skip=[Format.TENSORRT]).build_seconds
    assert times["resnet50/onnx"] == pytest.approx(86.8, rel=0.05)
    assert times["resnet50/torchscript"] == pytest.approx(110.4, rel=0.05)
    assert times["roberta-large/onnx"] == pytest.approx(692.9, rel=0.05)
    assert TORCHVISION_PARAMETERS["resnet50"] == 25_557_032


def test_shards_are_balanced_by_time_and_the_same_for_the_same_catalog() -> None:
    seconds = {f"m{i:03d}/onnx": float(1 + i % 7) for i in range(100)}
    groups = balanced_shards(seconds, 4)
    assert sorted(key for group in groups for key in group) == sorted(seconds)
    totals = [sum(seconds[key] for key in group) for group in groups]
    assert max(totals) - min(totals) <= max(seconds.values())
    assert balanced_shards(dict(reversed(list(seconds.items()))), 4) == groups
    assert wall_seconds(seconds, 4) == max(totals)
    assert wall_seconds(seconds, 1) == sum(seconds.values())


def test_a_catalogs_shards_keep_each_model_whole_and_never_exceed_its_models() -> None:
    from triton_mme.sizing.build_time import catalog_shards

    catalog = load_catalog("models.yaml")
    assert sorted(name for shard in catalog_shards(catalog, 8) for name in shard) == [
        "resnet50",
        "roberta-large",
    ]
    assert len(catalog_shards(catalog, 8)) == 2 and catalog_shards(catalog, 1) == [
        ["resnet50", "roberta-large"]
    ]


def test_an_image_change_note_counts_the_plans_it_rebuilds_and_the_archives_it_checks() -> None:
    from build_support import catalog_of, tiny_cnn

    from triton_mme.sizing.build_time import archive_seconds, image_change_note

    default = load_catalog("models.yaml")
    note = image_change_note(default, "25.04-py3")
    (resnet50,) = [e for e in default.models if e.name == "resnet50"]
    minutes = archive_seconds(resnet50, Format.TENSORRT) / 60
    assert note is not None and note.startswith("image 25.04-py3: the catalog's 1 TensorRT plan is built")
    assert f"rebuilds it (about {minutes:.0f} min" in note
    assert "the other 3 archives from the build cache, and serving-checks all 4 again" in note
    two = catalog_of(
        tiny_cnn(name="a", formats=["onnx", "tensorrt"]), tiny_cnn(name="b", formats=["tensorrt"])
    )
    assert "2 TensorRT plans are built for its TensorRT; another tag rebuilds them" in str(
        image_change_note(two, "25.04-py3")
    )
    assert image_change_note(catalog_of(tiny_cnn()), "25.04-py3") is None

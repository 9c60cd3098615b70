"""At a thousand archives, acceptance calls a bounded sample: each format and tensor layout at least once, the
rest by content hash, the same sample for the same manifest."""

from __future__ import annotations

import hashlib
from pathlib import Path

from triton_mme.acceptance.serving import sample_archives
from triton_mme.acceptance.timing import DEFAULT_SERVING_SAMPLE
from triton_mme.core.manifest import ArchiveRecord, Manifest


def family(like: ArchiveRecord, count: int) -> list[ArchiveRecord]:
    """`count` archives of one layout, as a family of fine-tunes gives them (names and hashes differ)."""
    records = []
    for index in range(count):
        digest = hashlib.sha256(f"{like.name}-{index}".encode()).hexdigest()
        name = f"{like.name[:40]}-v{index:04d}"
        records.append(
            like.model_copy(
                update={"name": name, "sha256": digest,
                        "target_model": f"{name}-{like.format}-{digest[:16]}.tar.gz"}
            )
        )  # fmt: skip
    return records


def test_a_thousand_archives_are_sampled_with_every_layout_and_deterministically(
    built: tuple[Path, Manifest],
) -> None:
    _, tiny = built
    layouts = len({(r.format, r.name) for r in tiny.archives})  # the tiny build: two models, two formats
    archives = [record for like in tiny.archives for record in family(like, 250)]
    manifest = Manifest(archives=tuple(archives))
    assert len(manifest.archives) == 250 * len(tiny.archives)
    sample = sample_archives(manifest, DEFAULT_SERVING_SAMPLE)
    assert len(sample) == DEFAULT_SERVING_SAMPLE
    assert {(r.format, r.name.rsplit("-v", 1)[0]) for r in sample} == {
        (r.format, r.name[:40]) for r in tiny.archives
    }
    assert layouts == len(tiny.archives)
    assert sample_archives(Manifest(archives=tuple(reversed(archives))), DEFAULT_SERVING_SAMPLE) == sorted(
        sample, key=lambda r: archives.index(r), reverse=True
    )


def test_a_small_manifest_or_a_zero_limit_calls_every_archive(built: tuple[Path, Manifest]) -> None:
    _, tiny = built
    assert sample_archives(tiny, DEFAULT_SERVING_SAMPLE) == list(tiny.archives)
    many = Manifest(archives=tuple(family(tiny.archives[0], 100)))
    assert sample_archives(many, 0) == list(many.archives)
    assert len(sample_archives(many, 5)) == 5

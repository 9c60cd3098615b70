"""The store object: its client, bucket and prefixes, as the commands build it from their arguments."""

from __future__ import annotations

import pytest

from triton_mme.store.errors import PublishError
from triton_mme.store.location import ModelStoreClient, Prefixes


def test_the_default_store_uses_the_stack_s_prefixes() -> None:
    store = ModelStoreClient(object(), "bucket")
    assert store.prefixes == Prefixes.of() == Prefixes("models/", "manifests/")
    assert store.url("models/a.tar.gz") == "s3://bucket/models/a.tar.gz"


def test_prefixes_as_written_are_normalised() -> None:
    store = ModelStoreClient.at(object(), "bucket", models="/team/models", manifests="team/manifests/")
    assert store.prefixes == Prefixes("team/models/", "team/manifests/")


@pytest.mark.parametrize(
    ("models", "manifests", "message"),
    [
        ("/", "manifests/", r"^--prefix: must name a folder"),
        ("models/", "", r"^--manifest-prefix: must name a folder"),
        (
            "models/",
            "models/manifests",
            r"^--manifest-prefix 'models/manifests/' overlaps --prefix 'models/'",
        ),
    ],
)
def test_overlapping_or_empty_prefixes_are_refused(models: str, manifests: str, message: str) -> None:
    with pytest.raises(PublishError, match=message):
        ModelStoreClient.at(object(), "bucket", models=models, manifests=manifests)

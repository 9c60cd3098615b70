"""How `add` and `remove` keep the live manifest from ever naming a deleted archive.

Each announces what it is about to do before it looks at what the other does, like Dekker's flags: an
intent is an object `<manifest prefix>intents/<TargetModel>/<add|remove>-<random>`, created with
`If-None-Match: *` (the bucket policy's rule for every object). S3 is strongly consistent for writes and
listings, so when an add and a remove of one archive overlap, at least one of them sees the other's
intent and stops:

- `add` announces, then refuses if a remove is announced, then makes sure the archive is in the bucket
  (uploading it again from its private copy if a finished remove deleted it), then writes the manifest,
  then withdraws its intent;
- `remove` announces, then refuses if an add is announced, then refuses (or with --force, first publishes
  a manifest without it) if the live manifest names the archive, then deletes it, then withdraws.

A remove that saw no add intent deletes only after reading a manifest that does not name the archive,
and any add that starts later sees the remove's intent until the archive is gone, and re-uploads it when
it is. An intent left behind by a crashed command blocks only that archive; the refusal names the object
to delete.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from triton_mme.store.location import ModelStoreClient
from triton_mme.store.publish import PublishError, create_json

ADD = "add"
REMOVE = "remove"
INTENTS_FOLDER = "intents/"
# Called with the name of each step of add and remove as it completes: the tests interleave the other
# command at every one of them.
Step = Callable[[str], None]


def no_step(_: str) -> None:
    return None


def intents_prefix(manifest_prefix: str, target_model: str) -> str:
    return f"{manifest_prefix}{INTENTS_FOLDER}{target_model}/"


def announced(store: ModelStoreClient, target_model: str, kind: str) -> list[str]:
    """Keys of the intents of `kind` for this archive."""
    prefix = intents_prefix(store.prefixes.manifests, target_model) + f"{kind}-"
    pages = store.s3.get_paginator("list_objects_v2").paginate(Bucket=store.bucket, Prefix=prefix)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


@contextmanager
def intent(store: ModelStoreClient, target_model: str, kind: str, *, refuses: str) -> Iterator[str]:
    """Announce `kind` for the archive, refuse while an intent of `refuses` is there, withdraw at the end."""
    key = intents_prefix(store.prefixes.manifests, target_model) + f"{kind}-{secrets.token_hex(8)}"
    create_json(store, key, b"{}")
    try:
        others = announced(store, target_model, refuses)
        if others:
            article = "an" if refuses == ADD else "a"
            raise PublishError(
                f"{store.url(others[0])}: {article} {refuses} of {target_model} is in progress; try again "
                "when it ends (if none is running, delete that object)"
            )
        yield key
    finally:
        store.s3.delete_object(Bucket=store.bucket, Key=key)

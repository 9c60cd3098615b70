"""How `add`, `upload` and `remove` keep the live manifest from ever naming a deleted archive.

Each announces what it is about to do before it looks at what the other does, like Dekker's flags: an
intent is an object `<manifest prefix>intents/<TargetModel>/<add|remove>-<random>`, created with
`If-None-Match: *` (the bucket policy's rule for every object). S3 is strongly consistent for writes and
listings, so when an add (or upload) and a remove of one archive overlap, at least one of them sees the
other's intent and stops:

- `add` announces, then refuses if a remove is announced, then makes sure the archive is in the bucket
  (uploading it again from its private copy if a finished remove deleted it), then writes the manifest,
  then withdraws its intent;
- `upload` does the same for every archive of its build: it announces an add intent per archive, refuses
  if a remove of any of them is announced, uploads what is missing, looks for remove intents once more
  and then writes the manifest, then withdraws all its intents. Its intents are add intents, so a remove
  of any version of this project (also one older than upload's intents) sees them;
- `remove` announces, then refuses if an add or upload is announced, then refuses (or with --force, first
  publishes a manifest without it) if the live manifest names the archive, then deletes it, then withdraws.

A remove that saw no add intent deletes only after reading a manifest that does not name the archive,
and any add that starts later sees the remove's intent until the archive is gone, and re-uploads it when
it is. An intent left behind by a crashed command blocks only that archive; the refusal names the object
to delete.

An upload of thousands of archives writes thousands of intents: they are written by a pool of threads and
withdrawn with DeleteObjects (1,000 keys a call), and the remove intents are looked for with one listing
of the intents' common prefix (1,000 keys a call) rather than one listing per archive. That costs a PUT
per archive, as cheap as the HEAD per archive it replaces in the check; one intent naming every archive
would cost a single PUT, but every remove would then have to read every upload intent's body.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from triton_mme.core.locations import INTENTS_FOLDER
from triton_mme.store.errors import PublishError
from triton_mme.store.location import ModelStoreClient

ADD = "add"
REMOVE = "remove"
# Called with the name of each step of add, upload and remove as it completes: the tests interleave the
# other command at every one of them.
Step = Callable[[str], None]
# What a refusal calls the holder of an intent of each kind (upload's intents are add intents).
_HOLDERS = {ADD: "an add or upload", REMOVE: "a remove"}
INTENT_WRITERS = 16
_DELETE_BATCH = 1000


def no_step(_: str) -> None:
    return None


def intents_prefix(manifest_prefix: str, target_model: str) -> str:
    return f"{manifest_prefix}{INTENTS_FOLDER}{target_model}/"


def _common_prefix(keys: Sequence[str]) -> str:
    first, last = min(keys), max(keys)
    shared = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first))
    return first[:shared]


def announced(store: ModelStoreClient, target_models: Sequence[str], kind: str) -> list[str]:
    """Keys of the intents of `kind` for these archives: one listing of their common prefix (the archive's
    own folder for one archive, the whole intents folder for a build's)."""
    folder = store.prefixes.manifests + INTENTS_FOLDER
    wanted = set(target_models)
    if not wanted:
        return []
    prefix = _common_prefix([intents_prefix(store.prefixes.manifests, t) + f"{kind}-" for t in wanted])
    pages = store.s3.get_paginator("list_objects_v2").paginate(Bucket=store.bucket, Prefix=prefix)
    found = []
    for key in (item["Key"] for page in pages for item in page.get("Contents", [])):
        target, _, name = key.removeprefix(folder).partition("/")
        if target in wanted and name.startswith(f"{kind}-"):
            found.append(key)
    return found


def _refuse_if_announced(store: ModelStoreClient, target_models: Sequence[str], refuses: str) -> None:
    others = announced(store, target_models, refuses)
    if others:
        target = others[0].removeprefix(store.prefixes.manifests + INTENTS_FOLDER).partition("/")[0]
        raise PublishError(
            f"{store.url(others[0])}: {_HOLDERS[refuses]} of {target} is in progress; try again when it ends "
            "(if none is running, delete that object)"
        )


def _create(store: ModelStoreClient, key: str) -> None:
    # A random key: created once, never compared with an earlier one.
    store.s3.put_object(
        Bucket=store.bucket, Key=key, Body=b"{}", ContentType="application/json", IfNoneMatch="*"
    )


def _withdraw(store: ModelStoreClient, keys: Sequence[str]) -> None:
    if len(keys) == 1:
        store.s3.delete_object(Bucket=store.bucket, Key=keys[0])
        return
    for start in range(0, len(keys), _DELETE_BATCH):
        batch = [{"Key": key} for key in keys[start : start + _DELETE_BATCH]]
        answer = store.s3.delete_objects(Bucket=store.bucket, Delete={"Objects": batch, "Quiet": True})
        errors = answer.get("Errors", [])
        if errors:
            first = errors[0]
            raise PublishError(
                f"{store.url(first['Key'])}: could not withdraw this intent ({first.get('Code')}); it blocks "
                "a remove of that archive until it is deleted"
            )


@contextmanager
def intents(
    store: ModelStoreClient, target_models: Sequence[str], kind: str, *, refuses: str
) -> Iterator[Callable[[], None]]:
    """Announce `kind` for every archive, refuse while an intent of `refuses` is there for any of them,
    withdraw them all at the end (also on failure). Yields a check to repeat before the manifest is
    written."""
    token = secrets.token_hex(8)
    keys = [intents_prefix(store.prefixes.manifests, target) + f"{kind}-{token}" for target in target_models]
    try:
        if len(keys) <= 1:
            for key in keys:
                _create(store, key)
        else:
            with ThreadPoolExecutor(max_workers=min(INTENT_WRITERS, len(keys))) as pool:
                list(pool.map(lambda key: _create(store, key), keys))

        def check() -> None:
            _refuse_if_announced(store, target_models, refuses)

        check()
        yield check
    finally:
        if keys:
            _withdraw(store, keys)


@contextmanager
def intent(store: ModelStoreClient, target_model: str, kind: str, *, refuses: str) -> Iterator[None]:
    """Announce `kind` for one archive, refuse while an intent of `refuses` is there, withdraw at the end."""
    with intents(store, [target_model], kind, refuses=refuses):
        yield

"""Where the model store is: one object carrying the S3 client, the bucket and the two key prefixes, handed
to every store operation in place of the four values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from triton_mme.core.locations import MANIFEST_PREFIX, MODEL_PREFIX
from triton_mme.store.errors import PublishError

S3Client = Any  # boto3 clients are generated at run time and carry no static type


def normalise_prefix(prefix: str) -> str:
    """`models`, `/models/` and `models/` all mean the key prefix `models/`."""
    stripped = prefix.strip("/")
    return f"{stripped}/" if stripped else ""


def check_prefixes(model_prefix: str, manifest_prefix: str) -> None:
    if not model_prefix:
        raise PublishError("--prefix: must name a folder such as 'models/' (the endpoint's ModelDataUrl)")
    if not manifest_prefix:
        raise PublishError("--manifest-prefix: must name a folder such as 'manifests/'")
    if manifest_prefix.startswith(model_prefix) or model_prefix.startswith(manifest_prefix):
        raise PublishError(
            f"--manifest-prefix '{manifest_prefix}' overlaps --prefix '{model_prefix}'; the manifest "
            "must live outside the model prefix, which the endpoint reads as TargetModel keys"
        )


@dataclass(frozen=True)
class Prefixes:
    """The model prefix (the endpoint's ModelDataUrl) and the manifest prefix, both ending in '/'."""

    models: str
    manifests: str

    @classmethod
    def of(cls, models: str = MODEL_PREFIX, manifests: str = MANIFEST_PREFIX) -> Prefixes:
        """Normalised (`models`, `/models/` -> `models/`) and checked not to overlap."""
        prefixes = cls(normalise_prefix(models), normalise_prefix(manifests))
        check_prefixes(prefixes.models, prefixes.manifests)
        return prefixes


@dataclass(frozen=True)
class ModelStoreClient:
    """The model store on S3: `s3` (a boto3 S3 client), `bucket`, and `prefixes` (default: models/ and
    manifests/, the stack's own)."""

    s3: S3Client
    bucket: str
    prefixes: Prefixes = Prefixes(MODEL_PREFIX, MANIFEST_PREFIX)

    @classmethod
    def at(
        cls, s3: S3Client, bucket: str, *, models: str = MODEL_PREFIX, manifests: str = MANIFEST_PREFIX
    ) -> ModelStoreClient:
        """The store under prefixes as a user writes them (normalised and checked, `Prefixes.of`)."""
        return cls(s3, bucket, Prefixes.of(models, manifests))

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

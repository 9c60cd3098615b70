"""Resolves the archive each inference component serves from the build's manifest: the custom resource
provider's on-event handler (docs/constructs.md, "Dedicated models").

An archive's key carries its content hash, known only once the build ran, while an inference component needs
a concrete ArtifactUrl. The resource depends on the build trigger, so the build's manifest
(`BuildManifestKey`, written once by the serving check) exists when it runs:

- Create and Update read that manifest and answer, for every (model, format) of `Models`, the archive's S3 URL
  as the attribute the entry names (`Attribute`: letters and digits, whatever the model's name); a model the
  manifest lacks fails the deployment in one line.
- Delete does nothing: the archives belong to the store.

The physical id is the build manifest's location, so a new build is a new resource and every component that
names its attributes is updated to the new archives.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import boto3


class ArchiveMissing(RuntimeError):
    """The build's manifest names no archive for a dedicated model; the message says which."""


@functools.cache
def client(service: str) -> Any:
    return boto3.client(service)


def on_event(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    properties = event["ResourceProperties"]
    bucket, key = properties["Bucket"], properties["BuildManifestKey"]
    answer: dict[str, Any] = {"PhysicalResourceId": f"s3://{bucket}/{key}"}
    if event["RequestType"] == "Delete":
        return answer
    manifest = json.loads(client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
    urls = archive_urls(manifest, properties["Models"], bucket=bucket, prefix=properties["ModelPrefix"])
    return {**answer, "Data": urls}


def archive_urls(
    manifest: dict[str, Any], wanted: list[dict[str, str]], *, bucket: str, prefix: str
) -> dict[str, str]:
    """{attribute: s3://bucket/<prefix><target model>} for each wanted (name, format, attribute)."""
    built = {(a["name"], a["format"]): a["target_model"] for a in manifest.get("archives", [])}
    urls = {}
    for model in wanted:
        target = built.get((model["Name"], model["Format"]))
        if target is None:
            raise ArchiveMissing(
                f"the build's manifest names no {model['Format']} archive of model {model['Name']!r}, which "
                f"the catalog places on an inference component; built: {_first_few(sorted(built))}"
            )
        urls[model["Attribute"]] = f"s3://{bucket}/{prefix}{target}"
    return urls


# A manifest of thousands of archives would make the refusal a page long: the first few and the count.
SHOWN = 5


def _first_few(built: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{name} ({fmt})" for name, fmt in built[:SHOWN]) or "nothing"
    return shown + (f" and {len(built) - SHOWN:,} more" if len(built) > SHOWN else "")

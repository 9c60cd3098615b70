"""One JSON snapshot per stack: a tripwire for unintended template changes.

Update after an intended change with `make snapshot-update` and review the diff in
tests/infra/__snapshots__/ like code.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from synth_support import Synthesized
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension
from syrupy.types import PropertyPath

ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def mask_asset_hashes(data: Any, path: PropertyPath) -> Any:
    """Asset hashes change with any byte of bundled code; the snapshot guards the template's shape."""
    if isinstance(data, str):
        return ASSET_HASH.sub("<asset-hash>", data)
    return data


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.with_defaults(extension_class=JSONSnapshotExtension)


def test_stack_template_matches_snapshot(
    default_synth: Synthesized, snapshot_json: SnapshotAssertion
) -> None:
    assert default_synth.template.to_json() == snapshot_json(matcher=mask_asset_hashes)

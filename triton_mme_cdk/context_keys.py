"""Context keys the app does not know: a typo in cdk.json or `-c` must stop synthesis and preflight instead of
silently deploying the defaults.

The CDK writes context of its own beside the settings: feature flags (`@aws-cdk/...`), the CLI's keys
(`aws:cdk:version-reporting`, `aws-cdk:enableDiffNoFail`, ...), cached lookups in cdk.context.json
(`availability-zones:account=...:region=...`) and `acknowledged-issue-numbers` (`cdk acknowledge`). All of
them start with `@` or contain a `:`, which no setting does; every other key must be a setting.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from triton_mme_cdk.settings import CONTEXT_KEYS

CDK_CONTEXT_KEYS = frozenset({"acknowledged-issue-numbers"})


def is_cdk_key(key: str) -> bool:
    return key.startswith("@") or ":" in key or key in CDK_CONTEXT_KEYS


def unknown_context_problem(keys: Iterable[str]) -> str | None:
    """One line naming the first key that is neither a setting nor the CDK's, with the closest setting."""
    for key in sorted(keys):
        if key in CONTEXT_KEYS or is_cdk_key(key):
            continue
        match = difflib.get_close_matches(key, CONTEXT_KEYS, n=1)
        hint = f"did you mean {match[0]}? " if match else ""
        return (
            f"unknown context key {key} (cdk.json, cdk.context.json or -c); {hint}allowed: a setting of "
            "docs/settings.md or a CDK feature flag (@aws-cdk/...)"
        )
    return None

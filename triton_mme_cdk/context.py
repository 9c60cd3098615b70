"""The context of a run without the `cdk` CLI: `make preflight` and `triton-mme plan` read cdk.json's
`context`, then cdk.context.json, then `-c key=value` pairs, in the CLI's order. Imports no aws_cdk.

Synthesis does not use this merge: `cdk` resolves the context itself and app.py reads it from the App
(`app.node.get_all_context()`). Preflight and the planner run where no `cdk` CLI runs (plain Python, no Node
process, `triton-mme plan` even without aws_cdk installed), and an `App` made there sees only the
CDK_CONTEXT_JSON environment variable the CLI sets, so they need this one merge of the same files; both paths
end in `settings_from`, so the keys and their checks are the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from triton_mme.core.bounded import DocumentError, read_json
from triton_mme.core.limits import MAX_CONTEXT_BYTES
from triton_mme_cdk.context_keys import unknown_context_problem
from triton_mme_cdk.settings import CONTEXT_KEYS, Settings, SettingsError

# Where `cdk` reads project context from, in increasing precedence (before `-c` on its command line).
CONTEXT_FILES = (("cdk.json", "context"), ("cdk.context.json", None))
COMMAND_LINE = "-c"


def settings_from(context: Mapping[str, Any]) -> Settings:
    """The settings of a whole context; a key that is neither a setting nor the CDK's is refused."""
    problem = unknown_context_problem(context)
    if problem:
        raise SettingsError(problem)
    return Settings.from_context({key: context.get(key) for key in CONTEXT_KEYS})


def _read_context_file(path: Path) -> dict[str, Any]:
    """A context file through the bounded reader: a document nested 200,000 levels deep is one line."""
    try:
        data = read_json(path, max_bytes=MAX_CONTEXT_BYTES, where=path.name)
    except DocumentError as error:
        raise SettingsError(str(error)) from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path.name}: not a JSON object; allowed: an object of context values")
    return data


def context_layers(pairs: Sequence[str], root: Path) -> list[tuple[str, dict[str, Any]]]:
    """(origin, values) per layer, lowest precedence first: each context file present, then `-c` pairs."""
    layers: list[tuple[str, dict[str, Any]]] = []
    for name, section in CONTEXT_FILES:
        path = root / name
        if path.is_file():
            data = _read_context_file(path)
            values = data.get(section, {}) if section else data
            if not isinstance(values, dict):
                raise SettingsError(f"{name}: {section or 'the file'} is not a JSON object of context values")
            layers.append((name, dict(values)))
    given: dict[str, Any] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise SettingsError(f"-c {pair} is not a context value; allowed: -c key=value")
        given[key.strip()] = value
    layers.append((COMMAND_LINE, given))
    return layers


def project_context(pairs: Sequence[str], root: Path) -> dict[str, Any]:
    """The context `cdk` gives the app: cdk.json's, then cdk.context.json's, then `-c key=value` pairs."""
    context: dict[str, Any] = {}
    for _, values in context_layers(pairs, root):
        context.update(values)
    return context


def setting_origins(pairs: Sequence[str], root: Path) -> dict[str, str]:
    """Where each setting's value comes from: the last layer that sets it, else the Settings default."""
    origins = {key: "default (triton_mme_cdk/settings/)" for key in CONTEXT_KEYS}
    for origin, values in context_layers(pairs, root):
        for key, value in values.items():
            if key in origins and value not in (None, ""):
                origins[key] = origin
    return origins

"""What the sub-commands share of argparse: number types whose refusals are one line, the options several
commands take, where the serving report key lives, and the one-line error printer.

Command modules (`triton_mme.<package>.commands`) import these from here, never from `triton_mme.cli`, which
imports every command module.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from triton_mme.core.errors import printable, quoted
from triton_mme.core.limits import DEFAULT_MAX_UNPACKED_BYTES
from triton_mme.core.numbers import finite_number, whole_number
from triton_mme.core.report_key import REPORT_KEY_ENV, REPORT_KEY_FILE


def non_negative_int(text: str) -> int:
    """An argparse type: a whole number, 0 or more."""
    value = whole_number(text)
    if value is None or value < 0 or text.strip().startswith(("+", "-")):
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not allowed; a whole number, 0 or more")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = whole_number(text)
    if value is None or value < 1 or text.strip().startswith("+"):
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not allowed; a whole number of at least 1")
    return value


def number_in(low: float, high: float, allowed: str) -> Callable[[str], float]:
    """An argparse type: a number from `low` to `high`; a refusal names `allowed` (`seconds from 1 to 60`)."""

    def parse(text: str) -> float:
        value = finite_number(text)
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{quoted(text)} is not allowed; {allowed}")
        return value

    return parse


def port_number(text: str) -> int:
    """An argparse type: 0 (any free port) to 65535."""
    value = whole_number(text)
    if value is None or not 0 <= value <= 65535 or text.strip().startswith(("+", "-")):
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not a port; allowed 0 (any free port) to 65535")
    return value


def add_unpacked_limit(parser: argparse.ArgumentParser) -> None:
    """`--max-unpacked-mib`: the bound on what an archive may unpack to, for commands that read archives."""
    parser.add_argument(
        "--max-unpacked-mib",
        dest="max_unpacked_bytes",
        type=lambda text: positive_int(text) * 1024 * 1024,
        default=DEFAULT_MAX_UNPACKED_BYTES,
        metavar="MIB",
        help="refuse an archive whose entries add up to more than this many MiB "
        f"(default: {DEFAULT_MAX_UNPACKED_BYTES // 1024**2})",
    )


def add_allow_field(parser: argparse.ArgumentParser) -> None:
    """`--allow-field PATH`: admit one config.pbtxt field the build does not write (archive_inspection)."""
    parser.add_argument(
        "--allow-field",
        action="append",
        default=[],
        metavar="PATH",
        help="admit this config.pbtxt field (dotted, e.g. dynamic_batching.priority_levels) though the build "
        "does not write it; fields that name files or code are never admitted (docs/input-limits.md)",
    )


def report_key_file() -> Path:
    """Where the serving report key lives for this user: $TRITON_MME_REPORT_KEY_FILE, else
    $XDG_CONFIG_HOME/triton-mme/report-key (the XDG base directory default, ~/.config)."""
    if os.environ.get(REPORT_KEY_ENV):
        return Path(os.environ[REPORT_KEY_ENV])
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / REPORT_KEY_FILE


def print_error(message: object) -> None:
    """`error: <message>` on stderr, on one line: a message quotes files, archives, models and replies,
    so its escapes and line breaks are shown, never acted on (core.errors.printable)."""
    print(f"error: {printable(message)}", file=sys.stderr)

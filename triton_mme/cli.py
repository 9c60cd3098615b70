"""`triton-mme`: the project's one command line, a sub-command per job.

Each job package may hold a `commands` module with `register(subparsers)`, which adds its sub-commands
and sets each one's `handler` (parsed arguments -> exit status). Packages are found at start-up, so a
machine that has only some of them (the build runner ships core, sizing, model_build and store; the serving
check runner core, client, serving_check and store)
offers just those.
Command modules stay cheap to import: heavy libraries are imported inside the handlers.

Errors a user can fix (`UserError`) print one line, `error: <message>`, and exit with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from importlib import metadata
from types import ModuleType
from typing import Any, NoReturn

import triton_mme
from triton_mme.arguments import print_error
from triton_mme.core.errors import UserError, describe_aws_error

PROG = "triton-mme"
DISTRIBUTION = "triton-mme-cdk"
# Help lists the jobs in the order data flows through them; packages not named here follow.
FLOW_ORDER = ("model_build", "serving_check", "store", "client", "local_triton")


def command_modules() -> list[ModuleType]:
    """Every `commands` module present, in a stable order."""
    packages = [package.name for package in pkgutil.iter_modules(triton_mme.__path__) if package.ispkg]
    packages.sort(key=lambda name: (FLOW_ORDER.index(name) if name in FLOW_ORDER else len(FLOW_ORDER), name))
    names = [f"triton_mme.{name}.commands" for name in packages]
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ModuleNotFoundError as error:
            if error.name is None or not name.startswith(error.name):
                raise  # a command module that exists but lacks a dependency is a real error
    return modules


class UsageError(UserError, ValueError):
    """Arguments argparse refuses; one line like every other error."""


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's default in --help, unless its help already says it or there is none to say."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        # Identity, not equality: a default of 0 or 0.0 is a value to show (0 == False).
        quiet = action.default is None or action.default is False or action.default == []
        if "default" in text.lower() or quiet or action.default is argparse.SUPPRESS:
            return text
        return super()._get_help_string(action) or text


class Parser(argparse.ArgumentParser):
    """argparse with the project's error shape: one `error: ...` line and status 1, not a usage block
    and status 2; --help shows defaults. Sub-command parsers are made of the same class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def parser() -> argparse.ArgumentParser:
    root = Parser(
        prog=PROG,
        description="Build, publish, check and call the models of a Triton multi-model endpoint.",
    )
    root.add_argument("--version", action="version", version=f"{PROG} {version()}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in command_modules():
        module.register(commands)
    return root


def _cloud_error(error: Exception) -> str | None:
    """One line for an AWS SDK error, without importing botocore where it is not loaded."""
    exceptions = sys.modules.get("botocore.exceptions")
    if exceptions is None:
        return None
    if isinstance(error, exceptions.ClientError):
        return f"AWS {error.operation_name}: {describe_aws_error(error)}"
    if isinstance(error, exceptions.BotoCoreError):
        return f"AWS: {describe_aws_error(error)}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        return int(args.handler(args))
    except UserError as error:
        print_error(error)
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        print_error(f"{where}{error.strerror or error}")
    except Exception as error:
        message = _cloud_error(error)
        if message is None:
            raise
        print_error(message)
    return 1

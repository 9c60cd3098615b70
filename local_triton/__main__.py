"""`python -m local_triton`: serve a build directory in a local CPU Triton, show the stand-in, measure."""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

from local_triton.loader import ModelError, unpack
from local_triton.runner import DEFAULT_MODEL_BUDGET, LocalTriton
from local_triton.server import TritonStartError
from local_triton.standin import StandInError, install_standin


def _positive(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; a whole number of at least 1")
    return value


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port; allowed 0 (any free port) to 65535")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m local_triton", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the archives of a build directory until Ctrl-C")
    serve.add_argument(
        "--models", type=Path, default=Path("build/models"), help="directory of *.tar.gz archives"
    )
    serve.add_argument("--port", type=_port, default=8080, help="loopback port of the local endpoint")
    serve.add_argument(
        "--model-budget",
        type=_positive,
        default=DEFAULT_MODEL_BUDGET,
        help="models kept loaded; past it the least recently used is unloaded",
    )
    serve.add_argument(
        "--scratch", type=Path, help="where archives are unpacked (default: a temporary directory)"
    )
    serve.add_argument("--access-log", action="store_true", help="print one line per request")
    standin = commands.add_parser("standin", help="print what the CPU stand-in changes in an archive")
    standin.add_argument("archive", type=Path)
    measure = commands.add_parser(
        "measure", help="load time and latency of every archive in the local Triton"
    )
    measure.add_argument("--models", type=Path, default=Path("build/models"))
    measure.add_argument("--requests", type=_positive, default=20, help="timed requests per model")
    return parser


def _stop_on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def serve(args: argparse.Namespace) -> int:
    local = LocalTriton(
        models_dir=args.models,
        port=args.port,
        model_budget=args.model_budget,
        scratch_dir=args.scratch,
        access_log=args.access_log,
    )
    # Ctrl-C and `kill` both stop cleanly, even where the shell started us with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        local.start()
        print(f"Local multi-model endpoint: {local.url}  (POST /models/<TargetModel>/invoke)", flush=True)
        print(
            f"Triton's SageMaker listener: port {local.triton.sagemaker_port} on ALL interfaces (0.0.0.0); "
            "send traffic only to 127.0.0.1",
            flush=True,
        )
        print(f"Archives in {args.models}; model budget {args.model_budget}; Ctrl-C stops.", flush=True)
        while local.triton.is_running():
            time.sleep(0.5)
        print(f"error: tritonserver stopped unexpectedly: {local.triton.log_tail()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Stopping the local Triton ...", flush=True)
        return 0
    finally:
        local.stop()


def show_standin(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="local-triton-standin-") as scratch:
        model_dir = unpack(args.archive, Path(scratch) / "model")
        standin = install_standin(model_dir, where=args.archive.name)
        for change in standin.changes:
            print(f"{args.archive.name}: {change}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            return serve(args)
        if args.command == "standin":
            return show_standin(args)
        from local_triton.measure import measure

        return measure(args.models, requests=args.requests)
    except (FileNotFoundError, StandInError, ModelError, TritonStartError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # e.g. the port is taken
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

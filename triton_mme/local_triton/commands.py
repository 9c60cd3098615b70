"""`triton-mme serve-local | standin | measure-local`: the build's archives in a local CPU Triton."""

from __future__ import annotations

import argparse
import signal
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import Any

from triton_mme.arguments import add_unpacked_limit, port_number, positive_int, print_error
from triton_mme.core.errors import printable
from triton_mme.core.locations import BUILD_DIR, LOCAL_TRITON_LOG_NAME
from triton_mme.local_triton import DEFAULT_INSTANCE_BUDGET, DEFAULT_MODEL_BUDGET

DEFAULT_PORT = 8080


def register(subparsers: Any) -> None:
    serve = subparsers.add_parser(
        "serve-local",
        help="serve the archives of a build directory in a local CPU Triton until Ctrl-C",
        description="Serve *.tar.gz archives on http://127.0.0.1:<port> the way a SageMaker multi-model "
        "endpoint loads them: unpack on first invocation, load under the TargetModel name, unload the least "
        "recently used past the model budget.",
    )
    serve.add_argument("--models", type=Path, default=BUILD_DIR, help="directory of *.tar.gz archives")
    serve.add_argument(
        "--port", type=port_number, default=DEFAULT_PORT, help="loopback port of the local endpoint"
    )
    serve.add_argument(
        "--model-budget",
        type=positive_int,
        default=DEFAULT_MODEL_BUDGET,
        help="models kept loaded; past it the least recently used is unloaded",
    )
    serve.add_argument(
        "--instance-budget",
        type=positive_int,
        default=DEFAULT_INSTANCE_BUDGET,
        help="model instances (python backend processes) of all loaded models together; past it the least "
        "recently used are unloaded, and a model asking alone for more gets fewer (default %(default)s: "
        "twice the CPUs, at least 4)",
    )
    serve.add_argument(
        "--scratch", type=Path, help="where archives are unpacked (default: a temporary directory)"
    )
    serve.add_argument("--access-log", action="store_true", help="print one line per request")
    serve.add_argument(
        "--triton-log",
        type=Path,
        help="where Triton's log goes, started afresh each run; `triton-mme models --local FOLDER` reads it "
        f"(default: {LOCAL_TRITON_LOG_NAME} in the --models folder)",
    )
    add_unpacked_limit(serve)
    serve.set_defaults(handler=_serve)

    standin = subparsers.add_parser("standin", help="print what the local CPU stand-in changes in an archive")
    standin.add_argument("archive", type=Path)
    add_unpacked_limit(standin)
    standin.set_defaults(handler=_show_standin)

    measure = subparsers.add_parser(
        "measure-local", help="load time and latency of every archive in the local CPU Triton"
    )
    measure.add_argument("--models", type=Path, default=BUILD_DIR, help="directory of *.tar.gz archives")
    measure.add_argument("--requests", type=positive_int, default=20, help="timed requests per model")
    measure.set_defaults(handler=_measure)


def _stop_on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _serve(args: argparse.Namespace) -> int:
    from triton_mme.local_triton.runner import LocalTriton

    triton_log = args.triton_log or args.models / LOCAL_TRITON_LOG_NAME
    local = LocalTriton(
        models_dir=args.models,
        port=args.port,
        model_budget=args.model_budget,
        instance_budget=args.instance_budget,
        scratch_dir=args.scratch,
        access_log=args.access_log,
        max_unpacked_bytes=args.max_unpacked_bytes,
        triton_log=triton_log,
    )
    triton_log.unlink(missing_ok=True)
    # Ctrl-C and `kill` both stop cleanly, even where the shell started us with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        local.start()
        print(f"Local multi-model endpoint: {local.url}  (POST /models/<TargetModel>/invoke)", flush=True)
        print(
            "Triton runs in a private network namespace: its SageMaker listener is reachable only "
            "through this endpoint (docs/local-triton-isolation.md)",
            flush=True,
        )
        budgets = f"model budget {args.model_budget}, instance budget {args.instance_budget}"
        print(f"Archives in {args.models}; {budgets}; Ctrl-C stops.", flush=True)
        while local.triton.is_running():
            time.sleep(0.5)
        print_error(f"tritonserver stopped unexpectedly: {local.triton.log_tail()}")
        return 1
    except KeyboardInterrupt:
        print("Stopping the local Triton ...", flush=True)
        return 0
    finally:
        local.stop()


def _show_standin(args: argparse.Namespace) -> int:
    from triton_mme.local_triton.loader import unpack
    from triton_mme.local_triton.standin import install_standin

    with tempfile.TemporaryDirectory(prefix="local-triton-standin-") as scratch:
        model_dir = unpack(args.archive, Path(scratch) / "model", max_unpacked_bytes=args.max_unpacked_bytes)
        standin = install_standin(model_dir, where=args.archive.name, max_instances=DEFAULT_INSTANCE_BUDGET)
        for change in standin.changes:
            print(printable(f"{args.archive.name}: {change}"))
    return 0


def _measure(args: argparse.Namespace) -> int:
    from triton_mme.local_triton.measure import measure

    return measure(args.models, requests=args.requests)

"""`triton-mme serving-check | cuda-check`: every archive of a build, loaded and called in a real Triton."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from triton_mme.arguments import non_negative_int, positive_int, report_key_file
from triton_mme.core.errors import printable
from triton_mme.core.locations import BUILD_DIR, SERVING_REPORT_FILE_NAME
from triton_mme.core.platform import PLATFORM
from triton_mme.core.runner_environment import TRITON_TAG_ENV
from triton_mme.core.wording import plural

SERVERS = ("local", "sagemaker")


def register(subparsers: Any) -> None:
    check = subparsers.add_parser(
        "serving-check",
        help="load every archive of a build in Triton, replay its golden data, time it (writes a report)",
        description="For every archive named in <from>/manifest.json: unpack it as SageMaker does, load it "
        "under its TargetModel name, send its golden inputs in Triton's binary format and compare the "
        "outputs with PyTorch's, time the load and the requests at batch 1 and at the largest batch an "
        "InvokeEndpoint call carries, then unload it. --server sagemaker starts the image's own `serve` in "
        "multi-model mode (inside the sagemaker-tritonserver image, as the deployment's GPU stage does); "
        "--server local uses the local CPU Triton. The report is signed with this user's report key "
        "(created on first use; $TRITON_MME_REPORT_KEY_FILE, else $XDG_CONFIG_HOME/triton-mme/report-key): "
        "`add --serving-report` accepts only a report signed here. Exits 1 with the first failing archive's "
        "line.",
    )
    check.add_argument("--server", choices=SERVERS, required=True, help="where to check the archives")
    check.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=BUILD_DIR,
        metavar="DIR",
        help="build directory with manifest.json, the archives and their golden data (default: %(default)s)",
    )
    check.add_argument("--out", type=Path, help=f"report file (default: <from>/{SERVING_REPORT_FILE_NAME})")
    check.add_argument("--requests", type=positive_int, default=30, help="timed requests per batch size")
    check.add_argument("--warmup", type=non_negative_int, default=3, help="untimed requests before timing")
    check.add_argument(
        "--triton-tag",
        default=os.environ.get(TRITON_TAG_ENV) or PLATFORM.images.default_tag.value,
        help=f"the image's tag, named in the report (default: ${TRITON_TAG_ENV}, else %(default)s)",
    )
    check.set_defaults(handler=_serving_check)

    cuda = subparsers.add_parser(
        "cuda-check",
        help="check that this GPU's driver runs the serving image's CUDA (no PyTorch needed)",
        description="Initialise CUDA through the driver API, print the GPU and the driver, and stop with one "
        "line when the driver (with any forward-compatibility libraries on LD_LIBRARY_PATH) cannot run the "
        "CUDA the Triton image was built for.",
    )
    cuda.add_argument(
        "--triton-tag",
        default=os.environ.get(TRITON_TAG_ENV) or PLATFORM.images.default_tag.value,
        help=f"the serving image's tag (default: ${TRITON_TAG_ENV}, else %(default)s)",
    )
    cuda.set_defaults(handler=_cuda_check)


def _serving_check(args: argparse.Namespace) -> int:
    from triton_mme.core.files import write_atomically
    from triton_mme.core.report_key import signing_key
    from triton_mme.serving_check.check import CheckError, CheckSettings, check_build, read_build, summary
    from triton_mme.serving_check.targets import LocalCpuTriton, SageMakerTriton

    read_build(args.source)  # a missing or broken build stops before any server starts
    key = signing_key(report_key_file())  # so does a key that cannot be used
    out: Path = args.out or args.source / SERVING_REPORT_FILE_NAME
    settings = CheckSettings(requests=args.requests, warmup=args.warmup)
    with tempfile.TemporaryDirectory(prefix="serving-check-server-") as workdir:
        target: LocalCpuTriton | SageMakerTriton
        if args.server == "local":
            target = LocalCpuTriton(workdir=Path(workdir))
        else:
            # Triton's own output goes to this command's (the build log), as the endpoint's goes to its logs.
            target = SageMakerTriton(log_path=None, triton_tag=args.triton_tag)
        print(f"server  {target.server}", flush=True)
        with target:
            report = check_build(
                args.source,
                target,
                settings=settings,
                progress=lambda r: print(printable(summary(r)), flush=True),
                phase=lambda line: print(f"  {printable(line)}", flush=True),
            )
    write_atomically(out, report.signed(key).to_json())
    print(f"report  {out}")
    if report.failures:
        first = report.failures[0]
        count = f" ({len(report.failures)} of {plural(len(report.archives), 'archive')} failed)"
        raise CheckError(f"serving check failed: {first.target_model}: {first.error}{count}")
    return 0


def _cuda_check(args: argparse.Namespace) -> int:
    from triton_mme.serving_check.gpu import check_cuda

    print(check_cuda(args.triton_tag).line())
    return 0

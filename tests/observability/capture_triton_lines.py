"""Capture a real Triton's model lines as fixtures: `python tests/observability/capture_triton_lines.py`.

Runs the local Triton (nvidia-pytriton's tritonserver, SageMaker mode, the endpoint's log flags) on the tiny
test models and does, through its SageMaker API, what an endpoint does to models: loads (with invocations),
evictions past the model budget, an unload on request, a load Triton refuses (a config that disagrees with
the graph), and a load whose model fails with PyTorch's out-of-memory message (a python-backend model that
raises it: a CPU machine cannot run a GPU out of memory, but the lines around the message are Triton's own).
Writes the whole log and what was done to each model (expected.json); the tests compare the two.

`--namespaced` records the second fixture without a model build: one tiny python-backend model (and one whose
load fails) through the same API, on a Triton started with the image entry point's flags, model namespacing
on (triton_mme/core/triton_container.py), and laid out as SageMaker lays out an archive
(`/opt/ml/models/<hash>/model/<model directory>`), so the lines read as on the endpoint once the scratch
directory's prefix is cut. It also records what `/ping` answers after a failed load in each ping mode.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent / "support")]

from tiny_archives import TINY_CATALOG, mismatched_archive  # noqa: E402

from triton_mme.catalog import parse_catalog  # noqa: E402
from triton_mme.client.triton_routes import SageMakerRoutes  # noqa: E402
from triton_mme.core.triton_container import PING_MODE_VARIABLE  # noqa: E402
from triton_mme.loadtest.requests import request_body  # noqa: E402
from triton_mme.local_triton.loader import ModelError  # noqa: E402
from triton_mme.local_triton.runner import LocalTriton  # noqa: E402
from triton_mme.local_triton.server import TritonServer  # noqa: E402
from triton_mme.model_build.pipeline import build_catalog  # noqa: E402

FIXTURES = HERE / "fixtures"
OOM_MODEL = "oom-python-0000000000000000.tar.gz"
OOM_MESSAGE = "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)"
OOM_CONFIG = 'backend: "python"\nmax_batch_size: 0\ninput [{ name: "x" data_type: TYPE_FP32 dims: [1] }]\n'
OOM_CONFIG += 'output [{ name: "y" data_type: TYPE_FP32 dims: [1] }]\n'
OOM_SCRIPT = "class TritonPythonModel:\n    def initialize(self, args):\n"
OOM_SCRIPT += f"        raise RuntimeError({OOM_MESSAGE!r})\n"

ECHO_MODEL = "echo-python-1111111111111111.tar.gz"
REFUSED_MODEL = "refused-python-2222222222222222.tar.gz"
ECHO_CONFIG = OOM_CONFIG
ECHO_SCRIPT = """import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        inputs = [pb_utils.get_input_tensor_by_name(r, "x").as_numpy() for r in requests]
        return [pb_utils.InferenceResponse([pb_utils.Tensor("y", x)]) for x in inputs]
"""
REFUSED_SCRIPT = "class TritonPythonModel:\n    def initialize(self, args):\n"
REFUSED_SCRIPT += "        raise RuntimeError('the model file does not match its config')\n"
ECHO_REQUEST = json.dumps({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.5]}]})


def sagemaker_layout(root: Path, digest: str, script: str) -> Path:
    """An unpacked archive where SageMaker puts one: /opt/ml/models/<hash>/model/<model directory>."""
    url = root / "opt" / "ml" / "models" / digest / "model"
    (url / "echo" / "1").mkdir(parents=True)
    (url / "echo" / "config.pbtxt").write_text(ECHO_CONFIG)
    (url / "echo" / "1" / "model.py").write_text(script)
    return url


class PingModeServer(TritonServer):
    """The local Triton with another ping mode than the endpoint's."""

    def __init__(self, mode: str, *, workdir: Path):
        super().__init__(workdir=workdir, log_path=workdir.with_suffix(".log"))
        self.mode = mode

    def _environment(self) -> dict[str, str]:
        return {**super()._environment(), PING_MODE_VARIABLE: self.mode}


def ping_after_failed_load(work: Path, mode: str) -> int:
    """What /ping answers once a load has failed, tritonserver in `mode` (start waits for a 200 first)."""
    with PingModeServer(mode, workdir=work / f"ping-{mode}") as server:
        routes = SageMakerRoutes(server.connection)
        url = sagemaker_layout(work / f"ping-{mode}", "3" * 32, REFUSED_SCRIPT)
        assert routes.load(REFUSED_MODEL, url).status == 400
        return routes.request("GET", "/ping").status


def capture_namespaced(out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="capture-"))
    done: dict[str, Counter[str]] = {}
    try:
        log = work / "tritonserver.log"
        with TritonServer(workdir=work / "server", log_path=log) as server:
            routes = SageMakerRoutes(server.connection)
            echo = sagemaker_layout(work, "a" * 32, ECHO_SCRIPT)
            counts = done[ECHO_MODEL] = Counter()
            for _ in range(2):  # load, two requests, evicted (unloaded); again
                assert routes.load(ECHO_MODEL, echo).ok
                counts["cold_loads"] += 1
                for _ in range(2):
                    reply = routes.invoke(ECHO_MODEL, ECHO_REQUEST.encode(), "application/json")
                    assert reply.ok, reply.error_line()
                    counts["requests"] += 1
                assert routes.unload(ECHO_MODEL).ok
                counts["evictions"] += 1
            refused = sagemaker_layout(work, "b" * 32, REFUSED_SCRIPT)
            assert routes.load(REFUSED_MODEL, refused).status == 400
            done[REFUSED_MODEL] = Counter(failed_loads=1)
        pings = {mode: ping_after_failed_load(work, mode) for mode in ("live", "ready")}
        text = re.sub(r"/tmp/local-triton-\w+", "/scratch", log.read_text().replace(str(work), ""))
        out.mkdir(parents=True, exist_ok=True)
        (out / "triton-2.51-sagemaker-namespaced.log").write_text(text)
        expected = {name: dict(sorted(counts.items())) for name, counts in sorted(done.items())}
        recorded = {"models": expected, "ping_after_failed_load": pings}
        (out / "expected-namespaced.json").write_text(json.dumps(recorded, indent=2) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def capture(out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="capture-"))
    done: dict[str, Counter[str]] = {}
    try:
        models = work / "models"
        manifest = build_catalog(parse_catalog(TINY_CATALOG), models, progress=False)
        records = {r.target_model: r for r in manifest.archives if r.format != "tensorrt"}
        onnx = next(r for r in records.values() if r.format == "onnx")
        refused = mismatched_archive(models, models / onnx.target_model, work / "mismatched").name
        log = work / "tritonserver.log"
        reports: list[str] = []
        with LocalTriton(models_dir=models, model_budget=2, report=reports.append, triton_log=log) as local:
            for name in [*records, next(iter(records))]:  # the third load evicts the first; it comes back
                for _ in range(2):
                    body = request_body(records[name])
                    reply = local.cache.invoke(name, body.body, body.content_type)
                    assert reply.status == 200, reply.error_line()
                    counts = done.setdefault(name, Counter())
                    counts["requests"] += 1
                    counts["cold_loads"] += not reply.cache_hit
            for name in local.cache.loaded:
                local.cache.unload(name)
            try:
                local.cache.ensure_loaded(refused)
            except ModelError:
                done.setdefault(refused, Counter())["failed_loads"] += 1
            oom_dir = work / "oom" / "model" / "oom"
            (oom_dir / "1").mkdir(parents=True)
            (oom_dir / "config.pbtxt").write_text(OOM_CONFIG)
            (oom_dir / "1" / "model.py").write_text(OOM_SCRIPT)
            reply = local.cache.routes.load(OOM_MODEL, oom_dir.parent)
            assert reply.status == 507, (reply.status, reply.error_line())
            done[OOM_MODEL] = Counter(failed_loads=1, failed_out_of_memory=1)
        for report in reports:  # the model cache's own account: "<TargetModel>: unloaded (<why>)"
            name, _, what = report.partition(": ")
            done[name]["evictions"] += what.startswith("unloaded (")
        text = log.read_text()
        out.mkdir(parents=True, exist_ok=True)
        scrubbed = re.sub(r"/tmp/local-triton-\w+", "/scratch", text.replace(str(work), "/scratch"))
        (out / "triton-2.51-sagemaker.log").write_text(scrubbed)
        expected = {name: dict(sorted(counts.items())) for name, counts in sorted(done.items())}
        (out / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--namespaced"]:
        capture_namespaced(FIXTURES)
    else:
        capture(FIXTURES)
    print(f"wrote {FIXTURES}")

"""Capture a real Triton's model lines as fixtures: `python tests/observability/capture_triton_lines.py`.

Runs the local Triton (nvidia-pytriton's tritonserver, SageMaker mode, the endpoint's log flags) on the tiny
test models and does, through its SageMaker API, what an endpoint does to models: loads (with invocations),
evictions past the model budget, an unload on request, a load Triton refuses (a config that disagrees with
the graph), and a load whose model fails with PyTorch's out-of-memory message (a python-backend model that
raises it: a CPU machine cannot run a GPU out of memory, but the lines around the message are Triton's own).
Writes the whole log and what was done to each model (expected.json); the tests compare the two.
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

from triton_mme.core.catalog import parse_catalog  # noqa: E402
from triton_mme.loadtest.requests import request_body  # noqa: E402
from triton_mme.local_triton.loader import ModelError  # noqa: E402
from triton_mme.local_triton.runner import LocalTriton  # noqa: E402
from triton_mme.model_build.pipeline import build_catalog  # noqa: E402

FIXTURES = HERE / "fixtures"
OOM_MODEL = "oom-python-0000000000000000.tar.gz"
OOM_MESSAGE = "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)"
OOM_CONFIG = 'backend: "python"\nmax_batch_size: 0\ninput [{ name: "x" data_type: TYPE_FP32 dims: [1] }]\n'
OOM_CONFIG += 'output [{ name: "y" data_type: TYPE_FP32 dims: [1] }]\n'
OOM_SCRIPT = "class TritonPythonModel:\n    def initialize(self, args):\n"
OOM_SCRIPT += f"        raise RuntimeError({OOM_MESSAGE!r})\n"


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
    capture(FIXTURES)
    print(f"wrote {FIXTURES}")

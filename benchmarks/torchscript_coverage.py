"""Does the TorchScript check accept what the exporter writes? Every torchvision classifier and text type.

`python -m benchmarks.torchscript_coverage [--image-size N] [--only NAME ...] [--out FILE]`

Each model is built as the build builds it, in its own forked process (so its peak memory is its own):
the catalog entry (`torchvision:<name>` or a Hugging Face encoder with a tiny random config, both
`weights: random`; a tiny sequence classifier as a checkpoint folder), `load_model`, the TorchScript
exporter's `export` (trace, save, reload through the code check), then both checks the project runs on
an archive's model.pt: the code walk without loading (archive_inspection.model_check) and the loaded graphs'
operators (model_build.inspection). The result file lists, per model, pass or fail with the one-line reason,
the graph's operators outside `TORCHSCRIPT_OPERATORS`, seconds and peak resident memory; its `operators` is
the union over all models, from which the allowlist is derived. Exit status 1 when any model fails.

Builds real models: run it under `flock /tmp/model-build.lock` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from triton_mme.core.errors import first_line

RESULT_FILE = Path(__file__).parent / "results" / "torchscript-coverage.json"
# The project's catalog default (ImageNet's crop); --image-size changes it for the convolutional models.
IMAGE_SIZE = 224
# Architectures that accept only their training resolution (a fixed patch grid or window partition).
FIXED_SIZE = {"vit_": 224, "maxvit_": 224, "swin_": 224}
SEQUENCE_LENGTH = 16
MAX_BATCH_SIZE = 2
# A tiny encoder of each text type the build accepts (sizing.checkpoint_sources.HF_CHECKPOINT_TYPES).
_TINY_BERT_LIKE = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "vocab_size": 1000,
    "max_position_embeddings": 130,
}
_TINY_DISTILBERT = {"dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 64, "vocab_size": 1000}
PER_MODEL_TIMEOUT_S = 1800


def tiny_text_config(model_type: str) -> dict[str, Any]:
    fields = _TINY_DISTILBERT if model_type == "distilbert" else _TINY_BERT_LIKE
    return {"model_type": model_type, **fields}


def image_size_for(name: str, requested: int) -> int:
    for prefix, size in FIXED_SIZE.items():
        if name.startswith(prefix):
            return size
    return requested


def torchvision_classifiers() -> list[str]:
    import torchvision

    return sorted(torchvision.models.list_models(module=torchvision.models))


def text_models() -> list[str]:
    from triton_mme.sizing.checkpoint_sources import HF_CHECKPOINT_TYPES

    return [f"{kind}:{head}" for kind in HF_CHECKPOINT_TYPES for head in ("encoder", "classifier")]


def _write_classifier_folder(folder: Path, model_type: str) -> None:
    """A tiny random sequence classifier as save_pretrained writes it, with the offline tokenizer."""
    import torch
    import transformers

    from triton_mme.model_build.tokenizer_offline import offline_tokenizer_json

    fields = {**tiny_text_config(model_type), "num_labels": 3}
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(**fields)
    transformers.AutoModelForSequenceClassification.from_config(config).save_pretrained(
        folder, safe_serialization=True
    )
    (folder / "tokenizer.json").write_bytes(offline_tokenizer_json(fields, SEQUENCE_LENGTH, name=model_type))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 128}), encoding="utf-8"
    )


def _load(model: str, image_size: int, workdir: Path) -> Any:
    from triton_mme.catalog import parse_catalog
    from triton_mme.model_build.sources import load_model

    common: dict[str, Any] = {"formats": ["torchscript"], "max_batch_size": MAX_BATCH_SIZE}
    if ":" not in model:
        size = image_size_for(model, image_size)
        raw: dict[str, Any] = {
            "source": f"torchvision:{model}",
            "weights": "random",
            "input_shape": [3, size, size],
        }
        return load_model(parse_catalog([{"name": "m", **common, **raw}]).models[0])
    model_type, head = model.split(":")
    text = {"sequence_length": SEQUENCE_LENGTH}
    if head == "encoder":
        raw = {
            "source": "huggingface:example/tiny",
            "weights": "random",
            "hf_config": tiny_text_config(model_type),
        }
        return load_model(parse_catalog([{"name": "m", **common, **text, **raw}]).models[0])
    folder = workdir / "checkpoint"
    _write_classifier_folder(folder, model_type)
    entry = parse_catalog([{"name": "m", **common, **text, "source": f"checkpoint:{folder}/"}]).models[0]
    return load_model(entry, checkpoint=folder)


def check_model(model: str, image_size: int) -> dict[str, Any]:
    """Export one model with the TorchScript exporter and run both TorchScript checks on the file."""
    import torch

    from triton_mme.archive_inspection.model_check import check_model_file
    from triton_mme.core.errors import UserError
    from triton_mme.core.formats import Format
    from triton_mme.core.platform import PLATFORM
    from triton_mme.model_build.exporters import ExportContext
    from triton_mme.model_build.exporters.torchscript import TorchScriptExporter
    from triton_mme.model_build.inspection import TORCHSCRIPT_OPERATORS, torchscript_operators

    started = time.perf_counter()
    result: dict[str, Any] = {"model": model}
    with tempfile.TemporaryDirectory(prefix="torchscript-coverage-") as scratch:
        workdir = Path(scratch)
        loaded = _load(model, image_size, workdir)
        result["input"] = [list(spec.dims) for spec in loaded.inputs]
        result["parameters"] = sum(p.numel() for p in loaded.module.parameters())
        failures = []
        try:
            TorchScriptExporter().export(loaded, ExportContext(workdir, PLATFORM.images.default_tag.value))
        except UserError as error:
            failures.append(f"export: {first_line(error)}")
        del loaded
        model_file = workdir / "model.pt"
        if model_file.is_file():
            try:
                check_model_file(model, Format.TORCHSCRIPT, model_file)
            except UserError as error:
                failures.append(f"code check: {first_line(error)}")
            # The file this process has just traced from a torchvision or transformers model: loaded as is
            # to list its graphs' operators, which the allowlist is derived from (judged by the checks here).
            operators = torchscript_operators(torch.jit.load(str(model_file)))
            result["operators"] = sorted(operators)
            result["outside_allowlist"] = sorted(operators - TORCHSCRIPT_OPERATORS)
            if result["outside_allowlist"]:
                failures.append(f"graph check: operators {', '.join(result['outside_allowlist'])}")
            result["model_pt_bytes"] = model_file.stat().st_size
    result["passed"] = not failures
    result["failures"] = failures
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return result


def _child(model: str, image_size: int, out: Path) -> None:
    try:
        result = check_model(model, image_size)
    except Exception as error:  # a model the exporter cannot trace is a finding, recorded in one line
        result = {
            "model": model,
            "passed": False,
            "failures": [f"{type(error).__name__}: {first_line(error)}"],
        }
    out.write_text(json.dumps(result), encoding="utf-8")


def run_isolated(model: str, image_size: int) -> dict[str, Any]:
    """check_model in a forked child: its own peak memory, and a crash or an OOM kill is one failed row."""
    context = multiprocessing.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="torchscript-coverage-result-") as scratch:
        out = Path(scratch) / "result.json"
        started = time.perf_counter()
        child = context.Process(target=_child, args=(model, image_size, out))
        child.start()
        child.join(PER_MODEL_TIMEOUT_S)
        if child.is_alive():
            child.kill()
            child.join()
        if out.is_file():
            return dict(json.loads(out.read_text(encoding="utf-8")))
        seconds = round(time.perf_counter() - started, 1)
        return {
            "model": model,
            "passed": False,
            "seconds": seconds,
            "failures": [f"exit code {child.exitcode}"],
        }


def _report(rows: list[dict[str, Any]], argv: list[str], image_size: int, seconds: float) -> dict[str, Any]:
    from triton_mme.archive_inspection.torchscript_code import TORCHSCRIPT_OPERATORS

    operators = sorted({op for row in rows for op in row.get("operators", [])})
    return {
        "command": " ".join(["python -m benchmarks.torchscript_coverage", *argv]),
        "image_size": image_size,
        "cpus": os.cpu_count(),
        "models": len(rows),
        "passed": sum(row["passed"] for row in rows),
        "failed": [row["model"] for row in rows if not row["passed"]],
        # This run's wall time (rows kept by --resume cost none of it), and each model's own time summed.
        "seconds": round(seconds, 1),
        "seconds_of_every_model": round(sum(row.get("seconds", 0) for row in rows), 1),
        "operators": operators,
        "operators_outside_allowlist": sorted(set(operators) - TORCHSCRIPT_OPERATORS),
        "allowlist_unused": sorted(TORCHSCRIPT_OPERATORS - set(operators)),
        "rows": rows,
    }


def _kept_rows(out: Path) -> dict[str, dict[str, Any]]:
    """Rows of an earlier run that still pass: passed then, and every operator still allowed."""
    from triton_mme.archive_inspection.torchscript_code import TORCHSCRIPT_OPERATORS

    if not out.is_file():
        return {}
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    return {
        r["model"]: r for r in rows if r["passed"] and set(r.get("operators", ["?"])) <= TORCHSCRIPT_OPERATORS
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.torchscript_coverage", description=__doc__)
    parser.add_argument("--image-size", type=int, default=IMAGE_SIZE, help="height and width of image inputs")
    parser.add_argument("--only", nargs="+", help="these models only (torchvision names or <type>:<head>)")
    parser.add_argument(
        "--out", type=Path, default=RESULT_FILE, help="result file (JSON), written after each model"
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the result file's rows that still pass; run the others"
    )
    arguments = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(arguments)
    # Imported once here, so that each forked child starts with them (no tensor work in this process).
    import torch  # noqa: F401
    import torchvision  # noqa: F401
    import transformers  # noqa: F401

    models = args.only or [*torchvision_classifiers(), *text_models()]
    kept = _kept_rows(args.out) if args.resume else {}
    started = time.perf_counter()
    rows = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for model in models:
        row = kept.get(model) or run_isolated(model, args.image_size)
        rows.append(row)
        verdict = "pass" if row["passed"] else "FAIL " + "; ".join(row["failures"])
        verdict += " (kept)" if model in kept else ""
        print(
            f"{model:28} {row.get('seconds', '?'):>7}s {row.get('peak_rss_mib', '?'):>6} MiB  {verdict}",
            flush=True,
        )
        report = _report(rows, arguments, args.image_size, time.perf_counter() - started)
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"{report['passed']} of {report['models']} pass; written to {args.out}")
    return 0 if report["passed"] == report["models"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

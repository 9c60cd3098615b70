"""Everything around the TensorRT engine build, with a fake `tensorrt` module (no TensorRT here).

The fake records the calls the exporter makes through TensorRT's documented Python API; the real
engine build and its GPU parity check run only on the GPU build runner.
"""

from __future__ import annotations

import re
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from build_support import catalog_of, entry_of, tiny_cnn, tiny_roberta

from triton_mme.archive_inspection.archive import read_archive
from triton_mme.core.manifest import TensorSpec
from triton_mme.core.platform import (
    PLATFORM,
    triton_release_of,
)
from triton_mme.model_build.exporters import ExportError
from triton_mme.model_build.exporters.tensorrt import (
    TensorRTExporter,
    check_tensorrt_version,
    profile_shapes,
    require_tensorrt,
)
from triton_mme.model_build.pipeline import BuildError, build_catalog

PLAN = b"serialized engine"


def fake_tensorrt(version: str = "10.9.0.34", parses: bool = True) -> ModuleType:
    calls: dict[str, Any] = {"flags": [], "shapes": {}, "pools": {}}

    class Config:
        def set_memory_pool_limit(self, pool: str, size: int) -> None:
            calls["pools"][pool] = size

        def set_flag(self, flag: str) -> None:
            calls["flags"].append(flag)

        def add_optimization_profile(self, profile: object) -> None:
            calls["profiles"] = calls.get("profiles", 0) + 1

    class Profile:
        def set_shape(self, name: str, smallest: tuple, optimal: tuple, largest: tuple) -> None:
            calls["shapes"][name] = (smallest, optimal, largest)

    class Builder:
        def __init__(self, logger: object) -> None:
            pass

        def create_network(self, flags: int) -> str:
            calls["network_flags"] = flags
            return "network"

        def create_builder_config(self) -> Config:
            return Config()

        def create_optimization_profile(self) -> Profile:
            return Profile()

        def build_serialized_network(self, network: str, config: Config) -> bytes:
            return PLAN

    class OnnxParser:
        num_errors = 0 if parses else 1

        def __init__(self, network: str, logger: object) -> None:
            pass

        def parse_from_file(self, path: str) -> bool:
            calls["onnx_file"] = path
            return parses

        def get_error(self, index: int) -> str:
            return "Unsupported operator Foo"

    module = ModuleType("tensorrt")
    module.__spec__ = ModuleSpec("tensorrt", None)  # torch's import machinery inspects loaded modules
    module.__dict__.update(
        __version__=version,
        Logger=type("Logger", (), {"WARNING": 2, "__init__": lambda self, level: None}),
        Builder=Builder,
        OnnxParser=OnnxParser,
        MemoryPoolType=SimpleNamespace(WORKSPACE="workspace"),
        BuilderFlag=SimpleNamespace(FP16="fp16"),
        calls=calls,
    )
    return module


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A machine that looks like the A10G build runner with TensorRT 10.9 (Triton 25.04)."""
    trt = fake_tensorrt()
    monkeypatch.setitem(sys.modules, "tensorrt", trt)
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)
    monkeypatch.setattr("torch.cuda.get_device_name", lambda index=0: "NVIDIA A10G")
    monkeypatch.setattr("torch.cuda.get_device_capability", lambda index=0: (8, 6))
    return trt


@pytest.mark.parametrize(
    ("tag", "release"), [("25.04-py3", "25.04"), ("24.09", "24.09"), ("25.09-py3", "25.09")]
)
def test_triton_release_from_image_tag(tag: str, release: str) -> None:
    image = triton_release_of(tag)
    assert image is not None and image.release == release


@pytest.mark.parametrize(
    ("installed", "tag", "expected"),
    [
        ("10.9.0.34", "25.04-py3", "10.9"),
        ("10.4.0.26", "24.09-py3", "10.4"),
        ("10.13.3.9", "25.09-py3", "10.13.3.9"),
    ],
)
def test_matching_tensorrt_versions_pass(installed: str, tag: str, expected: str) -> None:
    assert check_tensorrt_version(installed, tag) == expected


@pytest.mark.parametrize(
    ("installed", "tag", "message"),
    [
        ("10.13.3.9", "25.04-py3", "TensorRT 10.13.3.9 is installed but Triton 25.04 runs TensorRT 10.9"),
        (
            "11.0.0",
            "25.09-py3",
            "Triton 25.09 runs TensorRT 10.13.3.9: a plan built here would not load there",
        ),
        (
            "10.9.0",
            "23.10-py3",
            "Triton image tag '23.10-py3': TensorRT version unknown; known releases: 23.12, 24.01",
        ),
        ("10.9.0", "latest", "Triton image tag 'latest': expected YY.MM or YY.MM-py3"),
    ],
)
def test_mismatched_or_unknown_versions_fail_in_one_line(installed: str, tag: str, message: str) -> None:
    with pytest.raises(ExportError) as caught:
        check_tensorrt_version(installed, tag)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_no_gpu_or_no_tensorrt_fails_fast_and_suggests_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(
        ExportError, match="needs a CUDA GPU and none is available; pass --skip-format tensorrt"
    ):
        require_tensorrt("25.04-py3")
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)
    monkeypatch.setitem(sys.modules, "tensorrt", None)  # makes `import tensorrt` raise ImportError
    with pytest.raises(
        ExportError, match=r"needs the TensorRT Python package \(import tensorrt failed\); pass"
    ):
        require_tensorrt("25.04-py3")


def test_profile_spans_one_to_max_batch_with_the_preferred_batch_as_optimum() -> None:
    entry = entry_of(tiny_cnn(max_batch_size=8, dynamic_batching={"preferred_batch_sizes": [2, 4]}))
    spec = TensorSpec(name="input", datatype="FP32", dims=(3, 64, 64))
    assert profile_shapes(entry, [spec]) == {"input": ((1, 3, 64, 64), (4, 3, 64, 64), (8, 3, 64, 64))}
    text = entry_of(tiny_roberta(max_batch_size=4))
    specs = [TensorSpec(name=n, datatype="INT64", dims=(16,)) for n in ("input_ids", "attention_mask")]
    assert profile_shapes(text, specs)["attention_mask"] == ((1, 16), (4, 16), (4, 16))
    with pytest.raises(ExportError, match="dynamic non-batch dimension"):
        profile_shapes(text, [TensorSpec(name="input_ids", datatype="INT64", dims=(-1,))])


def test_plan_is_built_from_the_plain_onnx_with_fp16_profile_and_workspace(
    gpu: ModuleType, tmp_path: Path
) -> None:
    from triton_mme.model_build.exporters import ExportContext
    from triton_mme.model_build.sources import load_model

    entry = entry_of(tiny_cnn(formats=["tensorrt"], tensorrt={"workspace_mib": 256}))
    loaded, context = load_model(entry), ExportContext(tmp_path, "25.04-py3")
    exporter = TensorRTExporter()
    exported = exporter.optimise(loaded, exporter.export(loaded, context), context)
    calls = gpu.calls
    assert calls["onnx_file"] == str(tmp_path / "plain.onnx")
    assert calls["flags"] == ["fp16"]
    assert calls["pools"] == {"workspace": 256 << 20}
    assert calls["profiles"] == 1 and calls["network_flags"] == 0
    assert calls["shapes"] == {"input": ((1, 3, 64, 64), (4, 3, 64, 64), (4, 3, 64, 64))}
    assert exported.model_file.read_bytes() == PLAN
    assert exported.details["compute_capability"] == "8.6"


def test_fp32_precision_sets_no_fp16_flag(gpu: ModuleType, tmp_path: Path) -> None:
    from triton_mme.model_build.exporters import ExportContext
    from triton_mme.model_build.sources import load_model

    entry = entry_of(tiny_cnn(formats=["tensorrt"], tensorrt={"precision": "fp32"}))
    loaded, context = load_model(entry), ExportContext(tmp_path, "25.04-py3")
    exporter = TensorRTExporter()
    exporter.optimise(loaded, exporter.export(loaded, context), context)
    assert gpu.calls["flags"] == []


def test_parser_errors_surface_in_one_line(
    monkeypatch: pytest.MonkeyPatch, gpu: ModuleType, tmp_path: Path
) -> None:
    from triton_mme.model_build.exporters import ExportContext
    from triton_mme.model_build.sources import load_model

    monkeypatch.setitem(sys.modules, "tensorrt", fake_tensorrt(parses=False))
    loaded, context = load_model(entry_of(tiny_cnn())), ExportContext(tmp_path, "25.04-py3")
    exporter = TensorRTExporter()
    with pytest.raises(ExportError, match="TensorRT cannot parse the ONNX export: Unsupported operator Foo"):
        exporter.optimise(loaded, exporter.export(loaded, context), context)


def test_archive_and_manifest_record_version_gpu_and_profile(
    gpu: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The GPU parity check cannot run without TensorRT; its result is stubbed here and only here.
    monkeypatch.setattr(TensorRTExporter, "verify", lambda self, loaded, exported: {"parity": "stubbed"})
    catalog = catalog_of(tiny_cnn(formats=["tensorrt"]))
    (record,) = build_catalog(catalog, tmp_path, triton_tag="25.04-py3", progress=False).archives
    assert record.format == "tensorrt" and record.target_model.startswith("tiny-cnn-tensorrt-")
    assert {
        k: record.details[k] for k in ("tensorrt_version", "gpu_name", "compute_capability", "precision")
    } == {
        "tensorrt_version": "10.9.0.34",
        "gpu_name": "NVIDIA A10G",
        "compute_capability": "8.6",
        "precision": "fp16",
    }
    assert record.details["triton_image_tensorrt"] == "10.9"
    assert record.details["profile"] == {"input": [[1, 3, 64, 64], [4, 3, 64, 64], [4, 3, 64, 64]]}
    contents = read_archive(tmp_path / record.target_model)
    assert contents.config.platform == "tensorrt_plan" and contents.model_file_name == "model.plan"
    assert contents.config.max_batch_size == 4 and not contents.config.parameters


def test_a_mismatched_tensorrt_stops_the_build_before_any_work(
    monkeypatch: pytest.MonkeyPatch, gpu: ModuleType, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "tensorrt", fake_tensorrt(version="10.13.3.9"))
    with pytest.raises(
        BuildError, match=re.escape("TensorRT 10.13.3.9 is installed but Triton 25.04 runs TensorRT 10.9")
    ):
        build_catalog(catalog_of(tiny_cnn(formats=["onnx", "tensorrt"])), tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_version_table_covers_the_documented_images() -> None:
    known = {image.release: image.tensorrt for image in PLATFORM.triton_images.values() if image.tensorrt}
    assert {"24.09": "10.4", "25.04": "10.9", "25.09": "10.13.3.9"}.items() <= known.items()

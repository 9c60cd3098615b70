"""The CPU stand-in rewrites only what the python backend needs and says what it changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from tiny_archives import build_config
from tritonclient.grpc import model_config_pb2 as mc

from triton_mme.core.formats import Format
from triton_mme.local_triton.standin import (
    ARTIFACT_PARAMETER,
    STANDIN_PARAMETERS,
    NotRunnableOnCpu,
    StandInError,
    install_standin,
    rewrite_config,
)

KEPT_AS_BUILT = (
    "name",
    "max_batch_size",
    "input",
    "output",
    "dynamic_batching",
    "model_warmup",
)


def _model_dir(root: Path, config: mc.ModelConfig, file_name: str) -> Path:
    model_dir = root / config.name
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "1" / file_name).write_bytes(b"model bytes")
    (model_dir / "config.pbtxt").write_text(text_format.MessageToString(config))
    return model_dir


def test_onnx_config_becomes_a_cpu_python_model_with_everything_else_kept() -> None:
    built = build_config(Format.ONNX)
    rewritten, fmt, model_file, changes = rewrite_config(built, where="m.tar.gz")
    assert (fmt, model_file) == ("onnx", "model.onnx")
    assert rewritten.backend == "python" and not rewritten.platform
    assert [g.kind for g in rewritten.instance_group] == [mc.ModelInstanceGroup.KIND_CPU]
    assert rewritten.instance_group[0].count == built.instance_group[0].count
    assert not rewritten.optimization.execution_accelerators.gpu_execution_accelerator
    assert not rewritten.default_model_filename
    for field in KEPT_AS_BUILT:
        assert getattr(rewritten, field) == getattr(built, field), field
    # Only the parameters the stand-in reads stay, as built.
    assert dict(rewritten.parameters) == {
        k: v for k, v in built.parameters.items() if k in STANDIN_PARAMETERS
    }
    text = "\n".join(changes)
    for expected in (
        "backend 'python'",
        "parameters: arena_extend_strategy, cudnn_conv_algo_search, do_copy_in_default_stream removed",
        "KIND_GPU -> KIND_CPU",
        "removed tensorrt",
        "default_model_filename",
    ):
        assert expected in text
    assert len(changes) == 5  # nothing else was touched


def test_torchscript_config_is_served_from_model_pt() -> None:
    built = build_config(Format.TORCHSCRIPT)
    rewritten, fmt, model_file, changes = rewrite_config(built, where="m")
    assert (fmt, model_file, rewritten.backend) == ("torchscript", "model.pt", "python")
    assert "TorchScript" in changes[0]
    assert rewritten.input == built.input and rewritten.output == built.output


def test_a_non_default_model_file_name_is_handed_to_the_standin() -> None:
    built = build_config(Format.ONNX)
    built.default_model_filename = "custom.onnx"
    rewritten, _, model_file, _ = rewrite_config(built, where="m")
    assert model_file == "custom.onnx"
    assert rewritten.parameters[ARTIFACT_PARAMETER].string_value == "custom.onnx"


def test_the_input_config_is_left_untouched() -> None:
    built = build_config(Format.ONNX)
    before = built.SerializeToString()
    rewrite_config(built, where="m")
    assert built.SerializeToString() == before


def test_tensorrt_is_reported_as_not_runnable_on_cpu() -> None:
    built = build_config(Format.TENSORRT)
    with pytest.raises(NotRunnableOnCpu, match=r"^plan\.tar\.gz: a TensorRT plan .* not runnable .* CPU"):
        rewrite_config(built, where="plan.tar.gz")


def test_an_unknown_platform_names_the_allowed_ones() -> None:
    built = mc.ModelConfig(name="m", platform="tensorflow_savedmodel")
    with pytest.raises(
        StandInError, match="'tensorflow_savedmodel' has no CPU stand-in; allowed: onnxruntime"
    ):
        rewrite_config(built, where="m")


def test_install_adds_the_standin_script_and_rewrites_config_on_disk(tmp_path: Path) -> None:
    built = build_config(Format.ONNX)
    model_dir = _model_dir(tmp_path, built, "model.onnx")
    standin = install_standin(model_dir, where="t.tar.gz")
    assert standin.model_dir == model_dir
    assert "class TritonPythonModel" in (model_dir / "1" / "model.py").read_text()
    on_disk = text_format.Parse((model_dir / "config.pbtxt").read_text(), mc.ModelConfig())
    assert on_disk.backend == "python" and on_disk.input == built.input
    assert standin.changes[-1].startswith("1/model.py: added")


def test_install_refuses_an_archive_without_its_model_file(tmp_path: Path) -> None:
    built = build_config(Format.ONNX)
    model_dir = _model_dir(tmp_path, built, "other.onnx")
    with pytest.raises(StandInError, match=r"no <version>/model\.onnx in the archive"):
        install_standin(model_dir)


@pytest.mark.parametrize("file_name", ["../../x", "/etc/passwd", "1/model.onnx", "..", ".model.onnx"])
def test_an_archive_setting_the_standins_model_file_parameter_is_refused(file_name: str) -> None:
    built = build_config(Format.ONNX)
    built.parameters[ARTIFACT_PARAMETER].string_value = file_name
    with pytest.raises(StandInError) as caught:
        rewrite_config(built, where="m.tar.gz")
    assert str(caught.value) == (
        f"m.tar.gz: parameters.{ARTIFACT_PARAMETER} is reserved for the local stand-in; "
        "allowed: name the model file with default_model_filename"
    )


@pytest.mark.parametrize("file_name", ["../../x", "sub/model.onnx", ".model.onnx"])
def test_a_default_model_filename_outside_the_version_directory_is_refused(file_name: str) -> None:
    built = build_config(Format.ONNX)
    built.default_model_filename = file_name
    with pytest.raises(
        StandInError, match=r"^m: default_model_filename .* is not a file name in the version"
    ):
        rewrite_config(built, where="m")

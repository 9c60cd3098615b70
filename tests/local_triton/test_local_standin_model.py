"""The stand-in's model.py outside Triton: a fake of the python backend's utilities drives execute()."""

from __future__ import annotations

import importlib
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_archives import BuiltArchive

from triton_mme.archive_inspection.archive import extract_archive


class _Tensor:
    def __init__(self, name: str, value: np.ndarray):
        self.name, self.value = name, value

    def as_numpy(self) -> np.ndarray:
        return self.value


class _Response:
    def __init__(self, output_tensors: list[_Tensor] | None = None, error: object = None):
        self.outputs = {t.name: t.value for t in output_tensors or []}
        self.error = error


def _fake_backend_utils() -> types.ModuleType:
    utils = types.ModuleType("triton_python_backend_utils")
    utils.Tensor = _Tensor  # type: ignore[attr-defined]
    utils.InferenceResponse = _Response  # type: ignore[attr-defined]
    utils.TritonError = str  # type: ignore[attr-defined]
    utils.TritonModelException = RuntimeError  # type: ignore[attr-defined]
    utils.get_input_tensor_by_name = (  # type: ignore[attr-defined]
        lambda request, name: _Tensor(name, request[name]) if name in request else None
    )
    types_by_name = {"TYPE_FP32": np.float32, "TYPE_INT64": np.int64}
    utils.triton_string_to_numpy = types_by_name.__getitem__  # type: ignore[attr-defined]
    return utils


@pytest.fixture
def standin_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", _fake_backend_utils())
    monkeypatch.delitem(sys.modules, "triton_mme.local_triton.standin_model", raising=False)
    yield importlib.import_module("triton_mme.local_triton.standin_model")


def _initialised(
    module: types.ModuleType, archive: BuiltArchive, tmp_path: Path, **parameters: str
) -> object:
    """model.py initialised on the unpacked archive, with `parameters` added to its config."""
    extracted = extract_archive(archive.path, tmp_path)
    return _initialise(module, extracted.model_dir, extracted.contents.config, **parameters)


def _initialise(module: types.ModuleType, model_dir: Path, config: Any, **parameters: str) -> object:
    from google.protobuf import json_format

    for key, value in parameters.items():
        config.parameters[key].string_value = value

    model = module.TritonPythonModel()
    model.initialize(
        {
            "model_config": json.dumps(json_format.MessageToDict(config, preserving_proto_field_name=True)),
            "model_repository": str(model_dir),
            "model_version": "1",
        }
    )
    return model


@pytest.mark.parametrize("key", ["tiny-roberta/onnx", "tiny-roberta/torchscript"])
def test_requests_gathered_by_the_batcher_run_as_one_batch_and_split_back(
    standin_model: types.ModuleType, built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path, key: str
) -> None:
    archive = built[1][key]
    model = _initialised(standin_model, archive, tmp_path / "model")
    requests = [archive.sample(size) for size in (1, 3, 2)]
    merged = model.execute(requests)
    alone = [model.execute([request])[0] for request in requests]
    assert len(merged) == 3
    for together, single, request in zip(merged, alone, requests, strict=True):
        assert together.error is None and single.error is None
        for name, value in single.outputs.items():
            assert together.outputs[name].shape[0] == len(
                request["INPUT__0" if "INPUT__0" in request else "input_ids"]
            )
            np.testing.assert_allclose(together.outputs[name], value, rtol=1e-4, atol=1e-5)


def test_a_failing_request_gets_its_own_error_and_the_others_their_outputs(
    standin_model: types.ModuleType, built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path
) -> None:
    archive = built[1]["tiny-roberta/onnx"]
    model = _initialised(standin_model, archive, tmp_path / "model")
    good = archive.sample(1)
    bad = {**good, "input_ids": np.full_like(good["input_ids"], 10**6)}  # past the vocabulary
    first, second = model.execute([good, bad])
    assert first.error is None and set(first.outputs) == {"last_hidden_state", "pooler_output"}
    assert second.error is not None and second.error.startswith("InvalidArgument")


def test_a_config_that_disagrees_with_the_onnx_graph_is_refused(
    standin_model: types.ModuleType, built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path
) -> None:
    with pytest.raises(
        RuntimeError, match=r"tensor 'not_in_the_graph' of config\.pbtxt is not in model\.onnx"
    ):
        _initialised(standin_model, built[1]["mismatched/onnx"], tmp_path / "model")


@pytest.mark.parametrize("file_name", ["../../outside.onnx", "/etc/passwd", "1/model.onnx", ".hidden"])
def test_a_model_file_parameter_that_leaves_the_version_directory_is_refused(
    standin_model: types.ModuleType,
    built: tuple[Path, dict[str, BuiltArchive]],
    tmp_path: Path,
    file_name: str,
) -> None:
    archive = built[1]["tiny-cnn/onnx"]
    # A real model where a `../../` parameter would find it: refused for the name, not for a missing file.
    extract_archive(archive.path, tmp_path / "elsewhere")
    (tmp_path / "outside.onnx").write_bytes((tmp_path / "elsewhere/tiny-cnn-onnx/1/model.onnx").read_bytes())
    with pytest.raises(
        RuntimeError, match=r"local_standin_model_file .* is not a file name in .*/1; allowed"
    ):
        _initialised(
            standin_model,
            archive,
            tmp_path / "model" / "deep",
            local_standin_model_file=file_name,
        )


def test_a_model_file_parameter_through_a_symbolic_link_is_refused(
    standin_model: types.ModuleType, built: tuple[Path, dict[str, BuiltArchive]], tmp_path: Path
) -> None:
    extracted = extract_archive(built[1]["tiny-cnn/onnx"].path, tmp_path / "model")
    version = extracted.model_dir / "1"
    (tmp_path / "outside.onnx").write_bytes((version / "model.onnx").read_bytes())
    (version / "linked.onnx").symlink_to(tmp_path / "outside.onnx")
    with pytest.raises(RuntimeError, match=r"'linked\.onnx' is not a file name in"):
        _initialise(
            standin_model,
            extracted.model_dir,
            extracted.contents.config,
            local_standin_model_file="linked.onnx",
        )

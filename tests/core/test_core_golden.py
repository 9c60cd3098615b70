"""Golden data: reproducible bytes, readable with numpy alone; nothing but the writer's own arrays read."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from triton_mme.core.golden import GoldenData, GoldenError
from triton_mme.core.manifest import TensorSpec

INPUTS = (TensorSpec(name="input", datatype="FP32", dims=(3, 4)),)
OUTPUTS = (TensorSpec(name="output", datatype="FP32", dims=(5,)),)


def golden() -> GoldenData:
    rng = np.random.default_rng(1)
    return GoldenData(
        {"input": rng.standard_normal((2, 3, 4)).astype(np.float32)},
        {"output": rng.standard_normal((2, 5)).astype(np.float32)},
    )


def test_the_same_arrays_give_the_same_bytes_and_numpy_reads_them() -> None:
    data = golden().to_bytes()
    assert golden().to_bytes() == data  # no entry time or attribute varies: the content hash is stable
    loaded = np.load(io.BytesIO(data))  # allow_pickle stays False
    np.testing.assert_array_equal(loaded["input:input"], golden().inputs["input"])
    back = GoldenData.from_bytes(data, where="golden.npz")
    np.testing.assert_array_equal(back.outputs["output"], golden().outputs["output"])


def test_a_larger_batch_repeats_the_rows_in_order() -> None:
    inputs, outputs = golden().batch(5)
    assert inputs["input"].shape == (5, 3, 4) and inputs["input"].flags["C_CONTIGUOUS"]
    for row in range(5):
        np.testing.assert_array_equal(inputs["input"][row], golden().inputs["input"][row % 2])
        np.testing.assert_array_equal(outputs["output"][row], golden().outputs["output"][row % 2])


def _zip(entries: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _npy(value: object) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(value), allow_pickle=True)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not a zip", "g.npz: not a golden .npz file (File is not a zip file)"),
        (_zip({"../x.npy": _npy([1.0])}), "g.npz: entry '../x.npy' is not a stored 'input:<tensor>.npy'"),
        (
            _zip({"input:a.npy": _npy([1.0])}, zipfile.ZIP_DEFLATED),
            "g.npz: entry 'input:a.npy' is not a stored",
        ),
        (
            _zip({"input:a.npy": _npy([{"a": 1}])}),
            "g.npz: not a golden .npz file (Object arrays cannot be loaded",
        ),
        (_zip({"input:a.npy": _npy([[1.0]])}), "g.npz: holds no inputs or no outputs"),
        (
            _zip({"input:a.npy": _npy([[1.0]]), "output:b.npy": _npy([[1.0], [2.0]])}),
            "g.npz: arrays disagree on the number of rows ([1, 2])",
        ),
    ],
    ids=["not-a-zip", "path", "compressed", "pickle", "no-outputs", "rows"],
)
def test_anything_but_the_writers_arrays_is_refused_in_one_line(data: bytes, message: str) -> None:
    with pytest.raises(GoldenError) as refused:
        GoldenData.from_bytes(data, where="g.npz")
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)


def test_golden_data_must_fit_the_archives_tensors() -> None:
    golden().check_against(INPUTS, OUTPUTS, where="g")
    with pytest.raises(
        GoldenError, match=r"g: golden inputs \['input'\] but the archive declares \['INPUT__0'\]"
    ):
        golden().check_against((INPUTS[0].model_copy(update={"name": "INPUT__0"}),), OUTPUTS, where="g")
    with pytest.raises(GoldenError, match="g: golden input 'input' is float32, the archive takes INT64"):
        golden().check_against((INPUTS[0].model_copy(update={"datatype": "INT64"}),), OUTPUTS, where="g")
    with pytest.raises(
        GoldenError, match=r"golden output 'output' has shape \(2, 5\), the archive declares \[6\]"
    ):
        golden().check_against(INPUTS, (OUTPUTS[0].model_copy(update={"dims": (6,)}),), where="g")

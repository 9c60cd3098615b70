"""The model check every entry point runs (archive_inspection.model_check), without torch: TorchScript code
read as a syntax tree, ONNX domains read from the protobuf, TensorRT plans that are another format."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_archives import ELF_HEADER, custom_domain_onnx, torchscript_zip, write_plan_archive

from triton_mme.archive_inspection.archive import ArchiveError
from triton_mme.archive_inspection.model_check import check_model_file, inspect_archive
from triton_mme.archive_inspection.torchscript_code import scan_torchscript_code
from triton_mme.core.formats import Format
from triton_mme.core.manifest import Manifest

MODULE = """class M(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  def forward(self: __torch__.m.M,
    x: Tensor) -> Tensor:
    return torch.add(x, 1)
"""
# What torch.jit.script writes for a TorchScript class held as a module attribute (not a submodule): its
# method is not a method of any submodule, so walking named_modules() never saw it.
CLASS_METHOD = """class Hider(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  mapper : __torch__.hider.Mapper
  def forward(self: __torch__.hider.Hider,
    x: Tensor) -> Tensor:
    mapper = self.mapper
    _0 = torch.mul(torch.to((mapper).forward(), 6), 0)
    return torch.add(x, _0)
class Mapper:
  path : str
  def forward(self: __torch__.hider.Mapper) -> Tensor:
    path = self.path
    mapped = torch.from_file(path, True, 8, dtype=0)
    return mapped
"""


def _pt(tmp_path: Path, code: str, **extra: bytes) -> Path:
    path = tmp_path / "model.pt"
    path.write_bytes(torchscript_zip({"m": code}, extra=extra))
    return path


def _refusal(tmp_path: Path, code: str, **extra: bytes) -> str:
    with pytest.raises(ArchiveError) as caught:
        scan_torchscript_code("a.tar.gz", _pt(tmp_path, code, **extra))
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_code_of_the_exporters_operators_passes(tmp_path: Path) -> None:
    scan_torchscript_code("a.tar.gz", _pt(tmp_path, MODULE))


def test_a_submodule_called_again_in_one_forward_passes(tmp_path: Path) -> None:
    # torch.jit.trace names a submodule's further calls forward1, forward2, ... (torchvision's BasicBlock).
    again = "return (self.relu).forward12((self.relu).forward1(x, ), )"
    code = MODULE.replace("return torch.add(x, 1)", again)
    scan_torchscript_code("a.tar.gz", _pt(tmp_path, code))


def test_a_class_method_hiding_from_file_is_refused(tmp_path: Path) -> None:
    assert "line 15: uses operator aten::from_file, which the build's exporters never produce" in _refusal(
        tmp_path, CLASS_METHOD
    )


SETSTATE = "def __setstate__(self: __torch__.m.M, state: bool) -> NoneType:\n    return None\n"


@pytest.mark.parametrize(
    ("spelling", "reason"),
    [
        ("  " + SETSTATE.replace("def ", "def  "), "line 8: defines or names __setstate__, which torch.jit"),
        ("  " + SETSTATE.replace("def ", "def\t"), "holds characters other than printable ASCII and line"),
        ("  " + SETSTATE.replace("def ", "def \\\n"), "holds a backslash"),
        ("  def __getstate__(self: __torch__.m.M) -> bool:\n    return False\n", "names __getstate__"),
        ("  class Inner:\n    " + SETSTATE.replace("\n    ", "\n      "), "class Inner nested in class M"),
        ("class Other:\n  " + SETSTATE, "line 9: defines or names __setstate__"),
    ],
    ids=["two spaces", "tab", "line break", "getstate", "nested class", "another class"],
)
def test_setstate_is_refused_however_it_is_spelled(tmp_path: Path, spelling: str, reason: str) -> None:
    message = _refusal(tmp_path, MODULE + spelling)
    assert message.startswith("a.tar.gz: model.pt code 'model/code/__torch__/m.py' ")
    assert reason in message


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("return torch.save(x, 'x')", "uses operator aten::save"),
        ("return ops.evil.run(x)", "uses operator evil::run"),
        ("return torch.ops.evil.run(x)", "uses operator evil::run"),
        ("f = torch.from_file", "refers to torch.from_file outside a call"),
        ("return getattr(torch, 'from_file')(x)", "calls getattr(torch, 'from_file')"),
        ("f = getattr(torch, 'from_file')", 'calls getattr other than getattr(<module>, "<child>")'),
        ("return (self.child).helper(x)", "calls self.child.helper"),
        ("return (self.child).forward01(x)", "calls self.child.forward01"),
        ("return (self.child).forward_all(x)", "calls self.child.forward_all"),
        ("return __torch__.m.free(x)", "calls __torch__.m.free"),
        ("return torch.add(x, 1) # torch.from_file", "holds a comment"),
        ("return torch.add(x, len('''a'''))", "string literal other than a plain one"),
        ("return torch.add(x, getattr(self, '__setstate__'))", "__setstate__"),
    ],
)
def test_calls_outside_the_exporters_forms_are_refused(tmp_path: Path, line: str, reason: str) -> None:
    code = MODULE.replace("return torch.add(x, 1)", line)
    assert reason in _refusal(tmp_path, code)


def test_pickles_naming_other_globals_and_duplicate_records_are_refused(tmp_path: Path) -> None:
    evil = b"\x80\x02cbuiltins\neval\nq\x00."
    assert "names 'builtins eval'" in _refusal(tmp_path, MODULE, **{"model/constants.pkl": evil})
    custom = b"\x80\x02c__torch__.torch.classes.quantized\nLinearPackedParamsBase\nq\x00."
    assert "__torch__.torch.classes.quantized" in _refusal(tmp_path, MODULE, **{"model/x.pkl": custom})
    assert "more than once" in _refusal(tmp_path, MODULE, **{"model/code/__torch__/m.py": b"x = 1\n"})


def test_onnx_custom_domains_are_refused_in_every_graph(tmp_path: Path) -> None:
    for in_subgraph in (False, True):
        path = tmp_path / "model.onnx"
        path.write_bytes(custom_domain_onnx(in_subgraph=in_subgraph))
        with pytest.raises(ArchiveError, match=r"node 'n' uses operator 'Evil' of domain 'com.example'"):
            check_model_file("a.tar.gz", Format.ONNX, path)


def test_onnx_tensors_in_external_files_are_refused_in_attributes_too(tmp_path: Path) -> None:
    from onnx import TensorProto, helper
    from onnx.external_data_helper import set_external_data

    value = helper.make_tensor("w", TensorProto.FLOAT, [1], b"\x00" * 4, raw=True)
    set_external_data(value, location="../../../etc/passwd")
    value.data_location = TensorProto.EXTERNAL
    value.ClearField("raw_data")
    constant = helper.make_node("Constant", [], ["y"], value=value)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    model = helper.make_model(helper.make_graph([constant], "g", [], [y]))
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(ArchiveError, match=r"model.onnx tensor 'w' is stored in an external file"):
        check_model_file("a.tar.gz", Format.ONNX, path)


def test_a_plan_that_is_an_elf_executable_is_refused_and_other_bytes_are_not_judged(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match=r"model.plan starts with .*: it is an ELF executable"):
        inspect_archive(write_plan_archive(tmp_path, ELF_HEADER))
    inspect_archive(write_plan_archive(tmp_path, b"arbitrary bytes, no plan"))


@pytest.mark.slow
def test_every_archive_the_build_writes_passes(built: tuple[Path, Manifest]) -> None:
    out, manifest = built
    for record in manifest.archives:
        assert inspect_archive(out / record.target_model, record=record).format.value == record.format


def test_code_nested_past_the_parser_is_refused_in_one_line(tmp_path: Path) -> None:
    deep = "return torch.add(x, " + "+".join(["1"] * 200_000) + ")"
    assert "nests its expressions deeper than this check follows" in _refusal(
        tmp_path, MODULE.replace("return torch.add(x, 1)", deep)
    )

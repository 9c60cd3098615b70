"""The build's own TorchScript checks: no load of an unchecked file, and the loaded graphs of every
compiled function and class method (defence in depth behind archive_inspection.torchscript_code)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_archives import write_class_method_torchscript

from triton_mme.archive_inspection.archive import ArchiveError
from triton_mme.model_build import runtimes
from triton_mme.model_build.inspection import check_torchscript_operators


@pytest.mark.slow
def test_torchscript_is_loaded_only_after_its_code_check_and_class_methods_are_walked(tmp_path: Path) -> None:
    import torch
    from torch.jit._recursive import wrap_cpp_module

    victim = tmp_path / "operator-file.txt"
    victim.write_bytes(b"original contents")
    write_class_method_torchscript(tmp_path, victim)
    model = tmp_path / "model.pt"

    with pytest.raises(ArchiveError, match=r"calls mapper\.touch"):
        runtimes.load_torchscript(model)

    # Loaded past the code check, as torch.jit.load loads it (loading runs no method of this model):
    unit = torch._C.CompilationUnit()
    imported = torch._C.import_ir_module(  # type: ignore[call-arg]
        unit, str(model), torch.device("cpu"), {}, False
    )
    module = wrap_cpp_module(imported)
    check_torchscript_operators("m", module)  # the submodules' methods alone look harmless
    with pytest.raises(ArchiveError, match=r"model\.pt uses operator (.*, )?aten::from_file\b"):
        check_torchscript_operators("m", module, unit.get_functions())  # type: ignore[func-returns-value]
    assert victim.read_bytes() == b"original contents"

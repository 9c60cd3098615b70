"""Building the user's own checkpoints: state dicts and Hugging Face folders, local and in S3, with parallel
workers; what the manifest records of where each archive came from; a changed checkpoint rebuilds only its
entry; S3 checkpoints checked by preflight before any GPU minute."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber

from benchmarks.checkpoints import write_hf_folders, write_state_dicts
from triton_mme.catalog import CatalogError, load_catalog, parse_catalog
from triton_mme.core.manifest import Manifest
from triton_mme.model_build.cache import builder_version
from triton_mme.model_build.checkpoint_files import SOURCES_DIR_NAME
from triton_mme.model_build.lock import write_lock
from triton_mme.model_build.pipeline import ArchiveOutcome, BuildError, build_catalog
from triton_mme_cdk.preflight.checkpoints import check_checkpoints

BUCKET = "own-checkpoints"
STATE_DICTS = {
    "family": "vision",
    "architecture": "torchvision:squeezenet1_1",
    "formats": ["onnx"],
    "max_batch_size": 2,
    "input_shape": [3, 32, 32],
}
FOLDERS = {"family": "intent", "formats": ["onnx"], "max_batch_size": 2, "sequence_length": 16}


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("own-build")
    write_state_dicts(root / "checkpoints" / "vision", 2)
    write_hf_folders(root / "checkpoints" / "intent", 1)
    catalog = root / "models.yaml"
    vision = {**STATE_DICTS, "source": "checkpoint:checkpoints/vision/{variant}.safetensors"}
    intent = {**FOLDERS, "source": "checkpoint:checkpoints/intent/{variant}/"}
    catalog.write_text(
        yaml.safe_dump({"models": [{**vision, "variants": "listed"}, {**intent, "variants": "listed"}]})
    )
    write_lock(catalog)
    return root


@pytest.fixture(scope="module")
def vision_build(own: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    """The state dict family, built by two worker processes."""
    out = tmp_path_factory.mktemp("vision-build")
    catalog = load_catalog(own / "models.yaml")
    vision = catalog.subset([m.name for m in catalog.models if m.name.startswith("vision")])
    return out, build_catalog(vision, out, progress=False, workers=2)


@pytest.mark.slow
def test_state_dicts_build_in_parallel_workers_and_record_their_provenance(
    own: Path, vision_build: tuple[Path, Manifest]
) -> None:
    out, manifest = vision_build
    catalog = load_catalog(own / "models.yaml")
    records = {record.name: record for record in manifest.archives}
    assert sorted(records) == ["vision-c0000", "vision-c0001"]
    vision = records["vision-c0001"]
    assert vision.outputs[0].dims == (10,) and vision.weights == "checkpoint"
    assert vision.provenance is not None
    assert vision.provenance.source == "checkpoint:checkpoints/vision/c0001.safetensors"
    assert vision.provenance.sha256 == catalog.entry("vision-c0001").sha256
    assert vision.provenance.builder == builder_version()
    # A fine-tune's classes are its own: the architecture's ImageNet names are not recorded as its labels.
    assert "labels" not in vision.files and vision.preprocessing is not None
    assert Manifest.read(out / "manifest.json") == manifest
    assert records["vision-c0000"].sha256 != vision.sha256


@pytest.mark.slow
def test_a_changed_checkpoint_rebuilds_its_entry_alone(
    own: Path, vision_build: tuple[Path, Manifest], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(vision_build[0], out)
    project = tmp_path / "project"
    shutil.copytree(own, project)
    shutil.copy(
        project / "checkpoints/vision/c0000.safetensors", project / "checkpoints/vision/c0001.safetensors"
    )
    (project / "checkpoints/intent").rename(tmp_path / "no-intent")
    catalog_file = project / "models.yaml"
    raw = yaml.safe_load(catalog_file.read_text())
    catalog_file.write_text(yaml.safe_dump({"models": raw["models"][:1]}))
    write_lock(catalog_file)
    outcomes: list[ArchiveOutcome] = []
    build_catalog(load_catalog(catalog_file), out, progress=False, on_archive=outcomes.append)
    assert sorted((o.record.name, o.cached) for o in outcomes) == [
        ("vision-c0000", True),
        ("vision-c0001", False),
    ]


@pytest.mark.slow
def test_a_hugging_face_folder_builds_its_classifier_with_its_own_tokenizer(
    own: Path, tmp_path: Path
) -> None:
    catalog = load_catalog(own / "models.yaml")
    manifest = build_catalog(catalog, tmp_path / "out", progress=False, only="intent-c0000")
    (intent,) = manifest.archives
    assert [o.name for o in intent.outputs] == ["logits"] and intent.outputs[0].dims == (3,)
    tokenizer = json.loads((tmp_path / "out" / intent.files["tokenizer"]).read_text())
    assert tokenizer["truncation"]["max_length"] == 16 and tokenizer["padding"]["strategy"] == {"Fixed": 16}
    assert intent.provenance is not None and intent.provenance.source.endswith("intent/c0000/")


def s3_catalog(tmp_path: Path) -> Path:
    catalog = tmp_path / "models.yaml"
    vision = {**STATE_DICTS, "source": f"checkpoint:s3://{BUCKET}/vision/{{variant}}.safetensors"}
    intent = {**FOLDERS, "source": f"checkpoint:s3://{BUCKET}/intent/{{variant}}/"}
    catalog.write_text(
        yaml.safe_dump({"models": [{**vision, "variants": "listed"}, {**intent, "variants": "listed"}]})
    )
    return catalog


def upload(client: Any, own: Path) -> None:
    client.create_bucket(Bucket=BUCKET)
    for path in sorted((own / "checkpoints").rglob("*")):
        if path.is_file():
            client.upload_file(str(path), BUCKET, path.relative_to(own / "checkpoints").as_posix())


@pytest.mark.slow
def test_s3_checkpoints_are_listed_locked_checked_and_built(own: Path, tmp_path: Path, s3: Any) -> None:
    upload(s3, own)
    catalog_file = s3_catalog(tmp_path)
    result = write_lock(catalog_file, s3_client=s3)
    assert result.lock.families == {"intent": ("c0000",), "vision": ("c0000", "c0001")}
    local = write_lock(own / "models.yaml", check_only=True).lock
    # The same bytes give the same pins wherever they are.
    assert result.lock.checkpoints["vision-c0001"].sha256 == local.checkpoints["vision-c0001"].sha256
    assert result.lock.checkpoints["intent-c0000"].sha256 == local.checkpoints["intent-c0000"].sha256
    assert set(result.lock.checkpoints["intent-c0000"].etags) == {
        "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"
    }  # fmt: skip
    catalog = load_catalog(catalog_file)
    assert check_checkpoints(s3, catalog).ok
    manifest = build_catalog(catalog, tmp_path / "out", progress=False, only="vision-c0000")
    assert [r.name for r in manifest.archives] == ["vision-c0000"]
    copies = list((tmp_path / "out" / SOURCES_DIR_NAME).iterdir())
    assert [p.name for p in copies] == [catalog.entry("vision-c0000").sha256]


def test_an_s3_checkpoint_changed_after_the_lock_fails_preflight_and_the_build(
    own: Path, tmp_path: Path, s3: Any
) -> None:
    upload(s3, own)
    catalog_file = s3_catalog(tmp_path)
    write_lock(catalog_file, s3_client=s3)
    s3.upload_file(str(own / "checkpoints/vision/c0000.safetensors"), BUCKET, "vision/c0001.safetensors")
    catalog = load_catalog(catalog_file)
    result = check_checkpoints(s3, catalog)
    assert (
        not result.ok
        and "model 'vision-c0001'" in result.detail
        and "changed since the lock file" in result.detail
    )
    with pytest.raises(CatalogError, match=r"model 'vision-c0001'.*the pin says") as error:
        build_catalog(catalog, tmp_path / "out", progress=False, only="vision-c0001")
    assert "\n" not in str(error.value)
    assert not list((tmp_path / "out" / SOURCES_DIR_NAME).iterdir())  # the refused copy is not kept


@pytest.mark.parametrize(("code", "expected"), [("403", "access denied"), ("404", "no such object")])
def test_preflight_names_an_unreadable_s3_checkpoint(own: Path, tmp_path: Path, s3: Any, code: str,
                                                     expected: str) -> None:  # fmt: skip
    upload(s3, own)
    catalog = load_catalog_locked(tmp_path, s3)
    client = boto3.client("s3", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error("head_object", service_error_code=code, http_status_code=int(code))
        result = check_checkpoints(client, catalog)
    assert not result.ok
    assert result.detail.startswith("model 'vision-c0000': s3://own-checkpoints/vision/c0000.safetensors")
    assert expected in result.detail and "\n" not in result.line()


def load_catalog_locked(tmp_path: Path, s3: Any) -> Any:
    catalog_file = s3_catalog(tmp_path)
    write_lock(catalog_file, s3_client=s3)
    return load_catalog(catalog_file)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one model the user exported to ONNX themselves (a dynamic batch axis, own names)."""
    import torch
    import torchvision

    root = tmp_path_factory.mktemp("exported")
    (root / "exported").mkdir()
    model = torchvision.models.squeezenet1_1(num_classes=5).eval()
    path = root / "exported" / "scorer.onnx"
    torch.onnx.export(model, torch.randn(1, 3, 32, 32), path, input_names=["images"], output_names=["scores"],
                      dynamic_axes={"images": {0: "batch"}, "scores": {0: "batch"}}, opset_version=17,
                      dynamo=False)  # fmt: skip
    family = {"family": "exported", "source": "checkpoint:exported/{variant}.onnx", "variants": "listed",
              "formats": ["onnx"], "max_batch_size": 2}  # fmt: skip
    (root / "models.yaml").write_text(yaml.safe_dump({"models": [family]}))
    write_lock(root / "models.yaml")
    return root


@pytest.mark.slow
def test_an_exported_onnx_model_is_built_without_pytorch_and_checked_as_a_built_one(
    exported: Path, tmp_path: Path
) -> None:
    catalog = load_catalog(exported / "models.yaml")
    (record,) = build_catalog(catalog, tmp_path / "out", progress=False).archives
    assert record.name == "exported-scorer" and record.weights == "checkpoint"
    assert [(t.name, t.dims) for t in record.inputs] == [("images", (3, 32, 32))]
    assert [(t.name, t.dims) for t in record.outputs] == [("scores", (5,))]
    # No PyTorch reference exists: the record says the parity check only ran the file.
    assert "no PyTorch model" in record.details["parity"]["reference"]
    assert record.details["exporter"].startswith("prebuilt")
    assert "golden" in record.files and record.provenance is not None
    assert record.provenance.sha256 == catalog.entry("exported-scorer").sha256


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"formats": ["torchscript"]}, "builds onnx and tensorrt only, not torchscript"),
        ({"input_shape": [3, 32, 32]}, "input_shape: an exported ONNX model's graph states its inputs"),
        ({"architecture": "torchvision:resnet18"}, "states its own graph; leave architecture out"),
    ],
)
def test_an_exported_onnx_entry_refuses_what_its_graph_decides(fields: dict[str, Any], expected: str) -> None:
    entry = {"name": "scorer", "source": "checkpoint:exported/scorer.onnx", "formats": ["onnx"],
             "max_batch_size": 2, **fields}  # fmt: skip
    with pytest.raises(CatalogError, match=expected) as error:
        parse_catalog({"models": [entry]})
    assert "\n" not in str(error.value)


def test_a_file_that_is_no_onnx_model_is_refused_at_synthesis(tmp_path: Path) -> None:
    (tmp_path / "exported").mkdir()
    (tmp_path / "exported" / "scorer.onnx").write_text("not a model")
    entry = {"name": "scorer", "source": "checkpoint:exported/scorer.onnx", "formats": ["onnx"],
             "max_batch_size": 2}  # fmt: skip
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": [entry]}))
    with pytest.raises(
        CatalogError, match=r"model 'scorer': source: exported/scorer.onnx: not an ONNX model"
    ):
        write_lock(tmp_path / "models.yaml")


def test_an_exported_onnx_model_with_a_custom_operator_is_refused_before_onnx_runtime_opens_it(
    exported: Path, tmp_path: Path
) -> None:
    import onnx

    project = tmp_path / "project"
    shutil.copytree(exported, project)
    path = project / "exported" / "scorer.onnx"
    model = onnx.load(str(path))
    model.graph.node[0].domain = "com.example.custom"
    onnx.save(model, str(path))
    write_lock(project / "models.yaml")
    with pytest.raises(
        BuildError, match=r"exported-scorer/onnx: cannot load the model: .* of domain 'com.example.custom'"
    ) as error:
        build_catalog(load_catalog(project / "models.yaml"), tmp_path / "out", progress=False)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "out" / "manifest.json").exists()

"""Whether a checkpoint source can be built, known without PyTorch or the network (so synthesis checks it).

A local checkpoint is read here: its safetensors headers (never its tensors), its config, and its bytes for
the sha256 pin. A state dict must have the tensors of the architecture it names
(sizing.state_dict_signatures) with any number of classes; a Hugging Face folder must be an encoder
type the build exports, with safetensors weights and a fast tokenizer. An S3 checkpoint cannot be read at
synthesis: it must be in the lock file (`triton-mme lock`), and `make preflight` checks that each object is
there with its locked ETag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triton_mme.catalog import CatalogError, ModelEntry
from triton_mme.catalog.checkpoint_folder import check_tokenizer_files, inside, weight_files
from triton_mme.catalog.checkpoints import (
    HF_CONFIG_FILE,
    HF_TOKENIZER_FILE,
    PICKLE_SUFFIXES,
    CheckpointError,
    CheckpointKind,
    TensorHeader,
    local_digest,
    local_folder_files,
    read_hf_config,
    read_safetensors_header,
)
from triton_mme.catalog.lock import CheckpointPin
from triton_mme.core.errors import quoted
from triton_mme.core.suggest import did_you_mean
from triton_mme.sizing.checkpoint_contract import check_image_contract, check_text_contract
from triton_mme.sizing.checkpoint_parameters import agreed_parameters
from triton_mme.sizing.state_dict_signatures import body_digest, recorded_signatures

# The Hugging Face encoders the build exports (and whose memory it can estimate, sizing.build_memory),
# and the heads it serves: the bare encoder (last_hidden_state) or a sequence classifier (logits).
HF_CHECKPOINT_TYPES = ("bert", "roberta", "xlm-roberta", "camembert", "distilbert")
HF_TASK_SUFFIXES = ("Model", "ForSequenceClassification")


def hf_architecture(config: dict[str, Any], *, where: str) -> str | None:
    """The config's first `architectures` class name (None when it names none); CheckpointError when the
    field is not a list of class names."""
    architectures = config.get("architectures")
    if architectures is None:
        return None
    if not isinstance(architectures, list) or not all(isinstance(name, str) for name in architectures):
        raise CheckpointError(
            f"{where}: architectures is {type(architectures).__name__} {str(architectures)[:60]!r}; "
            'allowed: a list of class names (e.g. ["RobertaForSequenceClassification"])'
        )
    return architectures[0] if architectures else None


def hf_task(config: dict[str, Any]) -> str:
    """`encoder` or `sequence-classification`, from the config's `architectures`."""
    architectures = config.get("architectures") or []
    first = architectures[0] if isinstance(architectures, list) and architectures else ""
    return "sequence-classification" if str(first).endswith("ForSequenceClassification") else "encoder"


def state_dict_classes(tensors: dict[str, TensorHeader], architecture: str, *, where: str) -> int:
    """The number of classes of a state dict that fits `architecture` (CheckpointError when it does not)."""
    signatures = recorded_signatures()
    signature = signatures.get(architecture)
    if signature is None:
        raise CheckpointError(
            f"architecture: torchvision:{architecture} has no recorded state dict; "
            f"{did_you_mean(architecture, signatures)}allowed: a torchvision "
            f"classification model ({len(signatures)}, e.g. resnet50, efficientnet_b0, vit_b_16)"
        )
    head: dict[str, Any] = signature["head"]
    missing = [key for key in head if key not in tensors]
    if missing:
        raise CheckpointError(
            f"{where} is not a state dict of torchvision:{architecture}: it has no {quoted(missing[0])} "
            f"({len(tensors)} tensors); allowed: that architecture's model.state_dict(), saved as safetensors"
        )
    classes = {tensors[key].shape[spec["class_axis"]] for key, spec in head.items() if spec["shape"]}
    shapes = {name: tensor.shape for name, tensor in tensors.items()}
    if len(classes) != 1 or body_digest(shapes, head) != signature["body"]:
        raise CheckpointError(
            f"{where} is not a state dict of torchvision:{architecture}: its {len(tensors)} tensors' names "
            "or shapes differ from that architecture's (only the classifier's class count may change)"
        )
    (count,) = classes
    return int(count)


def _state_dict(path: Path, entry: ModelEntry, where: str) -> int:
    if not path.is_file():
        raise CheckpointError(f"{where}: no such file")
    tensors = read_safetensors_header(path, where=where)
    classes = state_dict_classes(tensors, entry.architecture_id, where=where)
    check_image_contract(entry, tensors, classes, where=where)
    return sum(t.elements for t in tensors.values())


def _onnx_file(path: Path, where: str) -> int:
    """An exported ONNX model: the build reads its graph (inputs, outputs, operators); synthesis only its
    size, whose float32 count stands for its parameters in the memory and time estimates."""
    if not path.is_file():
        raise CheckpointError(f"{where}: no such file")
    with path.open("rb") as stream:
        head = stream.read(1)
    # An ONNX file is a protobuf ModelProto: its first field is ir_version (field 1, varint: tag byte 0x08).
    if head != b"\x08":
        raise CheckpointError(f"{where}: not an ONNX model (a ModelProto starts with its ir_version)")
    return path.stat().st_size // 4


def _hf_folder(path: Path, entry: ModelEntry, where: str) -> int:
    if not path.is_dir():
        raise CheckpointError(f"{where}: no such folder (a Hugging Face folder saved by save_pretrained)")
    files = local_folder_files(path)
    if HF_CONFIG_FILE not in files:
        raise CheckpointError(f"{where}: no {HF_CONFIG_FILE}; allowed: a folder saved by save_pretrained")
    config = read_hf_config(files[HF_CONFIG_FILE], where=inside(where, HF_CONFIG_FILE))
    if config.get("model_type") not in HF_CHECKPOINT_TYPES:
        raise CheckpointError(
            f"{inside(where, HF_CONFIG_FILE)}: model_type {quoted(config.get('model_type'))} is not built "
            f"from a checkpoint; allowed: {', '.join(HF_CHECKPOINT_TYPES)}"
        )
    architecture = hf_architecture(config, where=inside(where, HF_CONFIG_FILE))
    if architecture is not None and not architecture.endswith(HF_TASK_SUFFIXES):
        raise CheckpointError(
            f"{inside(where, HF_CONFIG_FILE)}: architecture {quoted(architecture)} is not served; allowed: "
            "the bare encoder (e.g. RobertaModel) or a sequence classifier (RobertaForSequenceClassification)"
        )
    weights = weight_files(files, where=where)
    if not weights:
        pickles = sorted(p.name for p in path.iterdir() if p.name.endswith(PICKLE_SUFFIXES))
        found = f" (found {pickles[0]}, a pickle checkpoint, which runs code when loaded)" if pickles else ""
        raise CheckpointError(
            f"{where}: no model.safetensors{found}; allowed: weights saved with save_pretrained(..., "
            "safe_serialization=True)"
        )
    if HF_TOKENIZER_FILE not in files:
        raise CheckpointError(
            f"{where}: no {HF_TOKENIZER_FILE}; allowed: a folder with its fast tokenizer "
            "(tokenizer.save_pretrained(folder) of a fast tokenizer writes it)"
        )
    check_tokenizer_files(files, where=where)
    tensors = {
        key: tensor
        for name in weights
        for key, tensor in read_safetensors_header(files[name], where=inside(where, name)).items()
    }
    check_text_contract(entry, config, path, tensors, where=where)
    classifier = hf_task(config) == "sequence-classification"
    return agreed_parameters(
        config, tensors.values(), classifier=classifier, where=inside(where, HF_CONFIG_FILE)
    )


def inspect_local(entry: ModelEntry, path: Path) -> int:
    """Check a local copy of the entry's checkpoint (kind, headers, config); its parameter count.
    CatalogError (one line naming the entry) when it cannot be built."""
    where = f"model {quoted(entry.name)}: source: {entry.checkpoint_location.text}"
    try:
        if entry.checkpoint_kind is CheckpointKind.STATE_DICT:
            return _state_dict(path, entry, where)
        if entry.checkpoint_kind is CheckpointKind.ONNX_FILE:
            return _onnx_file(path, where)
        return _hf_folder(path, entry, where)
    except CheckpointError as error:
        raise CatalogError(str(error) if str(error).startswith("model ") else f"{where}: {error}") from None


def local_pin(entry: ModelEntry, base_dir: Path) -> CheckpointPin:
    """A local checkpoint checked (inspect_local) and pinned as it is now: what `triton-mme lock` records."""
    kind = entry.checkpoint_kind
    assert kind is not None
    try:
        path = entry.checkpoint_location.local_path(base_dir)
    except CheckpointError as error:
        raise CatalogError(f"model {quoted(entry.name)}: source: {error}") from None
    parameters = inspect_local(entry, path)
    sha256, size = local_digest(path, kind)
    return CheckpointPin(source=entry.source, sha256=sha256, size_bytes=size, parameters=parameters)


def resolve_checkpoint(entry: ModelEntry, base_dir: Path) -> CheckpointPin:
    """The entry's checkpoint checked and pinned; CatalogError (one line naming the entry) when it cannot be
    built or its content is not the pinned one."""
    location = entry.checkpoint_location
    where = f"model {quoted(entry.name)}: source: {location.text}"
    if location.is_s3:
        pin = entry.pin
        if pin is None:
            raise CatalogError(
                f"{where}: an S3 checkpoint must be in the lock file (its sha256, size and parameters); run "
                "`triton-mme lock` with read access to it, and commit models.lock.yaml"
            )
        return pin
    found = local_pin(entry, base_dir)
    if entry.sha256 is None:
        raise CatalogError(
            f"{where}: not pinned; run `triton-mme lock` (writes models.lock.yaml), or add sha256: "
            f"{found.sha256}"
        )
    if found.sha256 != entry.sha256:
        # The one edit that resolves it depends on where the pin is written.
        fix = (
            "if the change is intended, run `triton-mme lock`"
            if entry.pin is not None
            else "if the change is intended, delete the entry's sha256: line and run `triton-mme lock`"
        )
        raise CatalogError(
            f"{where}: its content's sha256 is {found.sha256[:16]}…, the pin says {entry.sha256[:16]}…; "
            f"allowed: the pinned checkpoint ({fix})"
        )
    return found

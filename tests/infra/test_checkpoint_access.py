"""What the build runner's role may read of the catalog's S3 checkpoints, as docs/catalog.md ("On the runner")
says: GetObject on a lone state dict's key, on every object under a Hugging Face folder's prefix and under a
family's shared folder, and ListBucket on the folder prefixes the build lists; nothing for local ones."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk

from triton_mme.catalog import Catalog, parse_catalog
from triton_mme.catalog.lock import CatalogLock, CheckpointPin
from triton_mme_cdk.constructs.build.checkpoint_access import checkpoint_read_statements

FAMILY = "checkpoint:s3://own-models/vision/{variant}.safetensors"
LONE = "checkpoint:s3://own-models/solo/cnn.safetensors"
FOLDER = "checkpoint:s3://own-models/text/intent/"


def pinned(source: str) -> CheckpointPin:
    return CheckpointPin(source=source, sha256="a" * 64, size_bytes=1, parameters=1000)


def catalog() -> Catalog:
    image = {"architecture": "torchvision:resnet18", "formats": ["onnx"], "max_batch_size": 8}
    models = [
        {"family": "vision", "source": FAMILY, "variants": "listed", **image},
        {"name": "solo", "source": LONE, **image},
        {"name": "intent", "source": FOLDER, "formats": ["onnx"], "max_batch_size": 8, "sequence_length": 16},
    ]
    pins = {f"vision-{v}": pinned(FAMILY.replace("{variant}", v)) for v in ("a", "b")}
    pins |= {"solo": pinned(LONE), "intent": pinned(FOLDER)}
    return parse_catalog(
        {"models": models}, lock=CatalogLock(families={"vision": ("a", "b")}, checkpoints=pins)
    )


def rendered(value: Any) -> Any:
    """`arn:<partition>:s3:::bucket/key` for CDK's Fn::Join of the partition."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join("<partition>" if isinstance(p, dict) else p for p in value["Fn::Join"][1])
    if isinstance(value, list):
        return [rendered(v) for v in value]
    return value


def test_the_grants_are_the_keys_and_folders_the_docs_name() -> None:
    stack = cdk.Stack()
    statements = [stack.resolve(s.to_statement_json()) for s in checkpoint_read_statements(catalog())]
    assert [{k: rendered(v) for k, v in s.items()} for s in statements] == [
        {
            "Action": "s3:GetObject",
            "Effect": "Allow",
            "Resource": [
                "arn:<partition>:s3:::own-models/solo/cnn.safetensors",  # a lone state dict: its key only
                "arn:<partition>:s3:::own-models/text/intent/*",  # a Hugging Face folder: all under it
                "arn:<partition>:s3:::own-models/vision/*",  # a family's shared folder: all under it
            ],
        },
        {
            "Action": "s3:ListBucket",
            "Condition": {"StringLike": {"s3:prefix": ["text/intent/"]}},
            "Effect": "Allow",
            "Resource": "arn:<partition>:s3:::own-models",
        },
    ]


def test_a_catalog_without_s3_checkpoints_grants_nothing() -> None:
    local = parse_catalog({"models": [{"name": "m", "source": "torchvision:resnet18", "formats": ["onnx"],
                                        "max_batch_size": 8, "weights": "random"}]})  # fmt: skip
    assert checkpoint_read_statements(local) == []

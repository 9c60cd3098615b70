from __future__ import annotations

from pathlib import Path

from aws_cdk import CustomResource, Duration, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from triton_mme.core.formats import Format
from triton_mme.core.locations import build_manifest_key
from triton_mme_cdk.constructs.functions.handler_function import handler_function, on_event_provider
from triton_mme_cdk.constructs.scanners.nag import acknowledge_wildcard_resources
from triton_mme_cdk.constructs.store.model_store import ModelStore

HANDLER_DIR = Path(__file__).parent / "archive_locations_handler"


class ArchiveLocations(Construct):
    """The S3 URL of the archive each dedicated model serves, read from the build's manifest at deploy time.

    `url(model)` is a reference to the custom resource's attribute: what names it (an inference component's
    ArtifactUrl) comes after the resource, which the caller makes wait for the build (`self.resource`). Its
    role may read the store's models and manifests only (archive_locations_handler/handler.py).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        store: ModelStore,
        fingerprint: str,
        archives: dict[str, Format],
        log_retention: logs.RetentionDays,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        """`archives`: the format each dedicated model serves, by model name."""
        super().__init__(scope, construct_id)
        try:
            manifest_key = build_manifest_key(fingerprint, store.manifest_prefix)
        except ValueError as error:
            raise ValueError(f"cannot resolve the dedicated models' archives: {error}") from None
        # The manifest exists when this runs (it waits for the build): it reads it once, no polling.
        on_event = handler_function(
            self, "OnEvent", handler_dir=HANDLER_DIR, entry="on_event", log_retention=log_retention
        )
        provider = on_event_provider(
            self, on_event, log_retention=log_retention, calls="S3 for the build's manifest"
        )
        store.grant_read(on_event)
        if encryption_key is not None:
            on_event.add_to_role_policy(
                iam.PolicyStatement(actions=["kms:Decrypt"], resources=[encryption_key.key_arn])
            )
        acknowledge_wildcard_resources(
            self,
            store.read_arns,
            reason="Reads are confined to the model store's models and manifests (the build's manifest).",
        )
        self.models = dict(sorted(archives.items()))
        # Attributes named by position, not by model name: a name's hyphens have no place in Fn::GetAtt.
        self.attributes = {name: f"Archive{index}" for index, name in enumerate(self.models)}
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=provider.service_token,
            resource_type="Custom::ArchiveLocations",
            properties={
                "Bucket": store.bucket.bucket_name,
                "ModelPrefix": store.model_prefix,
                "BuildManifestKey": manifest_key,
                "Models": [
                    {"Name": name, "Format": fmt.value, "Attribute": self.attributes[name]}
                    for name, fmt in self.models.items()
                ],
            },
            service_timeout=Duration.minutes(5),
        )

    def url(self, model: str) -> str:
        """The archive's s3:// URL (a reference resolved at deploy time)."""
        if model not in self.models:
            raise KeyError(f"{model!r} is not one of the dedicated models ({', '.join(sorted(self.models))})")
        return Token.as_string(self.resource.get_att(self.attributes[model]))

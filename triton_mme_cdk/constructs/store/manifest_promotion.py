from __future__ import annotations

from pathlib import Path

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from triton_mme.core.locations import build_manifest_key
from triton_mme_cdk.constructs.functions.handler_function import handler_function, on_event_provider
from triton_mme_cdk.constructs.scanners.nag import acknowledge_wildcard_resources
from triton_mme_cdk.constructs.store.model_store import ModelStore

HANDLER_DIR = Path(__file__).parent / "manifest_promotion_handler"
# The endpoint update is over when this runs; the handler's SageMaker waiter only covers a short Updating (a
# scaling activity), within the 15 minutes of the provider framework's function.
HANDLER_TIMEOUT = Duration.minutes(13)


class ManifestPromotion(Construct):
    """Makes the build of `fingerprint` the live manifest once the endpoint serves `endpoint_config_name`.

    `self.resource` depends on the endpoint (it reads its name and config name), so CloudFormation runs it
    after the endpoint update succeeded, and its rollback promotes the previous build back; its Delete
    leaves the live manifest as it is (manifest_promotion_handler/handler.py, docs/updates.md). Its role
    may describe that one endpoint, read the store's models and manifests, and write the live manifest only.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        store: ModelStore,
        fingerprint: str,
        endpoint_name: str,
        endpoint_arn: str,
        endpoint_config_name: str,
        log_retention: logs.RetentionDays,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        bucket = store.bucket
        try:
            source = build_manifest_key(fingerprint, store.manifest_prefix)
        except ValueError as error:
            raise ValueError(f"cannot promote a build: {error}") from None
        on_event = handler_function(
            self,
            "OnEvent",
            handler_dir=HANDLER_DIR,
            entry="on_event",
            log_retention=log_retention,
            timeout=HANDLER_TIMEOUT,
        )
        on_event.add_to_role_policy(
            iam.PolicyStatement(actions=["sagemaker:DescribeEndpoint"], resources=[endpoint_arn])
        )
        provider = on_event_provider(
            self,
            on_event,
            log_retention=log_retention,
            calls="S3 for the manifests and archives, SageMaker DescribeEndpoint",
        )
        # It checks the build's archives exist, reads its manifest and writes the live manifest only.
        store.grant_read(on_event)
        store.grant_promote(on_event)
        if encryption_key is not None:
            # SSE-KMS: reading an object needs kms:Decrypt, writing one kms:GenerateDataKey.
            on_event.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["kms:Decrypt", "kms:GenerateDataKey"], resources=[encryption_key.key_arn]
                )
            )
        acknowledge_wildcard_resources(
            self,
            store.read_arns,
            reason="Reads are confined to the model store's models (to check they exist) and manifests.",
        )
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=provider.service_token,
            resource_type="Custom::ManifestPromotion",
            properties={
                "Bucket": bucket.bucket_name,
                "ModelPrefix": store.model_prefix,
                "ManifestPrefix": store.manifest_prefix,
                "Fingerprint": fingerprint,
                "BuildManifestKey": source,
                "LiveManifestKey": store.live_manifest_key,
                "EndpointName": endpoint_name,
                "EndpointConfigName": endpoint_config_name,
            },
            service_timeout=Duration.minutes(15),
        )

"""The catalog's `placement: dedicated` entries beside the multi-model endpoint: their own inference component
endpoint, serving the archives of the same checked build (docs/placement.md)."""

from __future__ import annotations

from constructs import Construct

from triton_mme.core.naming import bounded_name
from triton_mme.core.triton_container import COMPONENT_ENVIRONMENT
from triton_mme_cdk.constructs.build.checked_build import CheckedModelBuild
from triton_mme_cdk.constructs.dedicated.inference_component_endpoint import InferenceComponentEndpoint
from triton_mme_cdk.constructs.endpoint.endpoint_logs import EndpointLogs
from triton_mme_cdk.constructs.endpoint.triton_image import TritonImage
from triton_mme_cdk.constructs.monitoring.monitoring import EndpointMonitoring
from triton_mme_cdk.constructs.multi_model_endpoint_props import TritonMultiModelEndpointProps
from triton_mme_cdk.constructs.operator_access import OperatorAccess
from triton_mme_cdk.settings.placement_rules import component_instances, dedicated_entries

# The inference component endpoint's name by default: the multi-model endpoint's, and this.
DEDICATED_ENDPOINT_SUFFIX = "ic"


class DedicatedModels(Construct):
    """One inference component per dedicated entry of the props' catalog, on an endpoint of their own
    (`endpoint`, InferenceComponentEndpoint), each with its own scaling, alarm and rolling updates. The
    archives are those of `build`, located in its manifest (`archive_locations`), and the endpoint serves them
    only once they passed the serving check in its image, as the multi-model endpoint does. Its log
    retention, alarms and dashboard section join the multi-model endpoint's (`endpoint_logs`, `monitoring`),
    and the `operators`' acceptance role may call and describe it. `props` are the multi-model endpoint's,
    validated, its endpoint named.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        props: TritonMultiModelEndpointProps,
        build: CheckedModelBuild,
        image: TritonImage,
        endpoint_logs: EndpointLogs,
        monitoring: EndpointMonitoring,
        operators: OperatorAccess,
    ) -> None:
        super().__init__(scope, construct_id)
        catalog, endpoint, name = props.catalog, props.endpoint, props.endpoint_name
        assert name is not None, "the props of a built TritonMultiModelEndpoint name its endpoint"
        entries = dedicated_entries(catalog)
        # The ids keep the logical IDs these resources had before this construct existed: the locations under
        # the build (a new ID would replace the function and read the manifest again), the endpoint as
        # "Default" (a new ID would replace an endpoint whose fixed name is taken).
        self.archive_locations = locations = build.locate_archives(
            "DedicatedArchives",
            {entry.name: served for entry in entries if (served := entry.dedicated_format)},
        )
        self.endpoint = InferenceComponentEndpoint(
            self,
            "Default",
            name=props.dedicated_endpoint_name or bounded_name(name, DEDICATED_ENDPOINT_SUFFIX),
            store=build.store,
            image=image,
            environment=COMPONENT_ENVIRONMENT,
            entries=entries,
            artifact_urls={entry.name: locations.url(entry.name) for entry in entries},
            instance_type=endpoint.instance_type,
            instances=component_instances(catalog),
            scaling=props.scaling,
            inference_ami_version=endpoint.resolved_inference_ami,
            network_isolation=endpoint.network_isolation,
            encryption_key=props.encryption_key,
            encrypt_volume=endpoint.volume_accepts_kms_key,
        )
        self.endpoint.endpoint.node.add_dependency(build.done)
        endpoint_logs.add_endpoint(
            "DedicatedRetention", endpoint_name=self.endpoint.endpoint_name, retention=endpoint.log_retention
        )
        self.endpoint.guard_updates(
            props.updates, thresholds=props.alarms, alarm_topic=monitoring.alarm_topic.topic
        )
        monitoring.dashboard.add_section("Inference components", self.endpoint.dashboard_widgets())
        # The acceptance run calls the dedicated models on their endpoint too, and reads its status.
        self.endpoint.grant_invoke(operators.acceptance_role)
        self.endpoint.grant_describe(operators.acceptance_role)

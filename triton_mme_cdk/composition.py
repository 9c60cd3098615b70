"""The app's composition: the catalog loaded and pinned once, the construct's props checked in the cdk.json
keys the app's users write, and the one stack, with the AwsSolutions checks run at synthesis."""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from triton_mme_cdk.catalog_files import load_build_catalog
from triton_mme_cdk.constructs.multi_model_endpoint_props import TritonMultiModelEndpointProps, checked
from triton_mme_cdk.settings import Settings
from triton_mme_cdk.stack import TritonMmeStack


def endpoint_props(settings: Settings) -> TritonMultiModelEndpointProps:
    """The construct's props for the app's settings, checked together with the catalog (SettingsError in the
    settings' cdk.json keys, CatalogError, one line each)."""
    catalog, files = load_build_catalog(settings.model_catalog)
    return checked(
        TritonMultiModelEndpointProps(
            catalog=catalog,
            catalog_files=files,
            endpoint_name=settings.endpoint_name,
            endpoint=settings.endpoint,
            scaling=settings.scaling,
            alarms=settings.alarms,
            updates=settings.updates,
            build=settings.build,
        )
    )


def compose(app: cdk.App, settings: Settings) -> TritonMmeStack:
    """Add the app's stack for these settings, with the AwsSolutions checks run at synthesis."""
    stack = TritonMmeStack(
        app,
        settings.stack_name,
        settings=settings,
        props=endpoint_props(settings),
        # Environment-agnostic unless a region is given: the image mapping then resolves at deploy time.
        env=cdk.Environment(region=settings.region) if settings.region else None,
        description="SageMaker GPU multi-model endpoint served by NVIDIA Triton, with GPU-based autoscaling",
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stack

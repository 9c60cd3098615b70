from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from triton_mme_cdk.settings import Settings
from triton_mme_cdk.stack import TritonMmeStack


def compose(app: cdk.App, settings: Settings) -> TritonMmeStack:
    """Add the app's stack for these settings, with the AwsSolutions checks run at synthesis."""
    stack = TritonMmeStack(
        app,
        settings.stack_name,
        settings=settings,
        # Environment-agnostic unless a region is given: the image mapping then resolves at deploy time.
        env=cdk.Environment(region=settings.region) if settings.region else None,
        description="SageMaker GPU multi-model endpoint served by NVIDIA Triton, with GPU-based autoscaling",
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stack

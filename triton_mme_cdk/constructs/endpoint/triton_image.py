from __future__ import annotations

from aws_cdk import Aws, CfnMapping, Stack
from constructs import Construct

from triton_mme.core.platform import (
    PLATFORM,
    registry_accounts,
)


class TritonImage(Construct):
    """The SageMaker Triton image URI, resolved per region at deploy time.

    A CloudFormation mapping (region -> registry account) for the chosen tag keeps one template
    deployable to every region that has the image.
    """

    def __init__(self, scope: Construct, construct_id: str, *, tag: str) -> None:
        super().__init__(scope, construct_id)
        self.tag = tag
        self.mapping = CfnMapping(
            self,
            "RegistryAccounts",
            mapping={region: {"account": account} for region, account in registry_accounts(tag).items()},
        )
        self.registry_account = self.mapping.find_in_map(Aws.REGION, "account")
        # URL_SUFFIX is amazonaws.com.cn in the China regions.
        repository = PLATFORM.images.repository.value
        self.image_uri = f"{self.registry_account}.dkr.ecr.{Aws.REGION}.{Aws.URL_SUFFIX}/{repository}:{tag}"
        self.repository_arn = Stack.of(self).format_arn(
            service="ecr",
            account=self.registry_account,
            resource="repository",
            resource_name=PLATFORM.images.repository.value,
        )

"""Justified checkov findings: a skip with its reason on the resource it concerns, added where it is defined.

checkov reads a CloudFormation resource's `Metadata: {checkov: {skip: [{id, comment}]}}` (checkov 3.3.30,
`checkov/cloudformation/context_parser.py`, `collect_skip_comments`) and reports that resource's check as
skipped with the comment. `make scan` runs checkov on the synthesized templates (docs/scanners.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import CfnResource
from constructs import IConstruct


@dataclass(frozen=True)
class CheckovCheck:
    name: str
    resource_types: tuple[str, ...]


# The checkov checks this project skips somewhere: id, checkov's name and the CloudFormation types it checks,
# as checkov 3.3.30 registers them (checkov/cloudformation/checks/resource/aws/<file>); `make scan` fails
# when checkov's own names differ.
CHECKS: Mapping[str, CheckovCheck] = {
    # S3AccessLogs.py
    "CKV_AWS_18": CheckovCheck("Ensure the S3 bucket has access logging enabled", ("AWS::S3::Bucket",)),
    # IAMWriteAccess.py
    "CKV_AWS_111": CheckovCheck(
        "Ensure IAM policies does not allow write access without constraints",
        (
            "AWS::IAM::Policy",
            "AWS::IAM::ManagedPolicy",
            "AWS::IAM::Group",
            "AWS::IAM::Role",
            "AWS::IAM::User",
        ),
    ),
    # LambdaFunctionLevelConcurrentExecutionLimit.py
    "CKV_AWS_115": CheckovCheck(
        "Ensure that AWS Lambda function is configured for function-level concurrent execution limit",
        ("AWS::Lambda::Function", "AWS::Serverless::Function"),
    ),
    # LambdaDLQConfigured.py
    "CKV_AWS_116": CheckovCheck(
        "Ensure that AWS Lambda function is configured for a Dead Letter Queue(DLQ)",
        ("AWS::Lambda::Function", "AWS::Serverless::Function"),
    ),
    # LambdaInVPC.py
    "CKV_AWS_117": CheckovCheck(
        "Ensure that AWS Lambda function is configured inside a VPC",
        ("AWS::Lambda::Function", "AWS::Serverless::Function"),
    ),
    # CloudWatchLogGroupKMSKey.py
    "CKV_AWS_158": CheckovCheck(
        "Ensure that CloudWatch Log Group is encrypted by KMS", ("AWS::Logs::LogGroup",)
    ),
    # SagemakerModelWithNetworkIsolation.py
    "CKV_AWS_370": CheckovCheck(
        "Ensure Amazon SageMaker model uses network isolation", ("AWS::SageMaker::Model",)
    ),
    # LambdaEnvironmentEncryptionSettings.py
    "CKV_AWS_173": CheckovCheck(
        "Check encryption settings for Lambda environment variable",
        ("AWS::Lambda::Function", "AWS::Serverless::Function"),
    ),
}

# Reasons that rest on one platform fact each, shared by every resource they apply to.
LOG_GROUP_KEY_REASON = (
    "CloudWatch Logs encrypts every log group at rest by default (AWS, 'Data encryption at rest for AWS "
    "Lambda' and 'Encrypt log data in CloudWatch Logs using AWS KMS'); a customer key would need a key "
    "policy for the logs service in this region. The stack's optional key protects the model data in the "
    "bucket."
)
CONCURRENCY_FACT = (
    "No reservation: a reservation is taken from the account's unreserved concurrency, of which Lambda keeps "
    "100 for functions without one (AWS, 'Configuring reserved concurrency': 'up to the Unreserved account "
    "concurrency value ... minus 100'), so in an account with a low quota the stack would not deploy."
)
ENVIRONMENT_KEY_REASON = (
    "The variables hold resource names and ARNs, no secret; Lambda encrypts environment variables at rest "
    "with an AWS managed key by default (AWS, 'Data encryption at rest for AWS Lambda')."
)


def skip_checks(construct: IConstruct, reasons: Mapping[str, str]) -> None:
    """Have checkov skip each check of `reasons` (id: why) on the CloudFormation resource of `construct` (the
    construct itself, or an L2's default child), beside any skip it already carries."""
    resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource for checkov skips")
    unknown = sorted(set(reasons) - set(CHECKS))
    if unknown:
        raise ValueError(
            f"{resource.node.path}: not a checkov check this project knows: {', '.join(unknown)}"
        )
    wrong_type = [
        check for check in reasons if resource.cfn_resource_type not in CHECKS[check].resource_types
    ]
    if wrong_type:
        raise ValueError(
            f"{resource.node.path}: not a check of {resource.cfn_resource_type}: {', '.join(wrong_type)}"
        )
    existing = resource.get_metadata("checkov") or {}
    skips = [s for s in existing.get("skip", []) if s["id"] not in reasons]
    skips += [{"id": check, "comment": reason} for check, reason in reasons.items()]
    resource.add_metadata("checkov", {**existing, "skip": skips})


def skip_function_checks(
    function: IConstruct, *, calls: str, invoked: str, failures: str, environment: bool = False
) -> None:
    """The Lambda checks this project's functions share: no VPC because of what the function `calls`, no
    reserved concurrency (how it is `invoked` bounds it), no dead-letter queue because of where its `failures`
    go, and with `environment` the AWS managed key for its variables."""
    reasons = {
        "CKV_AWS_117": f"No VPC: the function calls only AWS APIs ({calls}) and reaches nothing inside a "
        "VPC; the stack has none, and one would need NAT or an interface endpoint per service to reach them.",
        "CKV_AWS_116": f"No dead-letter queue: {failures}",
        "CKV_AWS_115": f"{CONCURRENCY_FACT} {invoked}",
    }
    if environment:
        reasons["CKV_AWS_173"] = ENVIRONMENT_KEY_REASON
    skip_checks(function, reasons)

from __future__ import annotations

from aws_cdk import Aws, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct


class AlarmTopic(Construct):
    """An SNS topic for alarm notifications: KMS-encrypted, TLS-only, optionally with an email subscriber.

    The topic's resource policy replaces SNS's default one, so it must allow CloudWatch to publish: only
    alarms of this account and region may, and only over TLS.

    The key is customer managed because CloudWatch cannot publish to a topic encrypted with the AWS
    managed alias/aws/sns key (its policy cannot be changed to admit cloudwatch.amazonaws.com); this
    key's policy lets CloudWatch alarms of this account and region use it, and nothing else.
    """

    def __init__(self, scope: Construct, construct_id: str, *, email: str | None = None) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "Key",
            description="Encrypts the endpoint's alarm notifications",
            enable_key_rotation=True,
            # It protects only messages passing through the topic, so it need not outlive the stack.
            removal_policy=RemovalPolicy.DESTROY,
        )
        alarms_arn_prefix = f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:"
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsToPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": f"{alarms_arn_prefix}*"},
                },
            )
        )
        self.topic = sns.Topic(
            self, "Topic", display_name="Triton endpoint alarms", master_key=self.key, enforce_ssl=True
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsToPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": f"{alarms_arn_prefix}*"},
                },
            )
        )
        if email is not None:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))

"""The CDK app: settings, the stack and its constructs (everything that becomes CloudFormation)."""

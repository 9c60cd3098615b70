"""The CDK app: settings and their platform rules, the stack and its constructs (everything that becomes
CloudFormation), and the read-only preflight checks run before a deployment."""

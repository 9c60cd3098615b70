"""Stacks compose the constructs of `cdk_constructs` from one validated `Settings` object."""

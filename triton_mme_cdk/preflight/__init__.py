"""Read-only checks against the AWS account before `cdk deploy`: quotas, images, bootstrap, region, and
changes the deployed stack cannot take in one deployment.

`make preflight` runs them for the settings `cdk deploy` would use (app.py reads them); each prints one line,
PASS or FAIL with the fix, and any FAIL makes the command exit non-zero. Nothing here writes to AWS.
"""

from triton_mme_cdk.preflight.checks import CheckResult
from triton_mme_cdk.preflight.run import PreflightClients, run_preflight

__all__ = ["CheckResult", "PreflightClients", "run_preflight"]

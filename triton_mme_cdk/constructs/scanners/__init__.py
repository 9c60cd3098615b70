"""The scanners' acknowledgements: cdk-nag and checkov findings each construct accepts, with their reasons."""

"""The shared core: catalog, manifest, naming, Triton config, archives, platform facts. No torch, no boto3."""

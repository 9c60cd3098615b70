"""The model store on S3: publish, list, add and remove archives and manifests.

The only code that writes to S3."""

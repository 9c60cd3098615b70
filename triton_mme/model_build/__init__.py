"""Export, verify and package the catalog's models into Triton archives.

The only package that needs PyTorch."""

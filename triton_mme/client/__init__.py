"""Call the multi-model endpoint by TargetModel: requests from images, text or arrays, replies read back.

Depends on the core, numpy, Pillow, tritonclient, boto3 and tokenizers; never on PyTorch."""

"""The yardstick of the invoke benchmark: boto3 + Pillow + tritonclient alone, the top 5 of one picture.

Usage: python benchmarks/plain_invoke.py ENDPOINT TARGET_MODEL IMAGE LABELS_JSON
"""

import json
import sys

import boto3
import numpy as np
import tritonclient.http as http
from PIL import Image

endpoint, target, image_path, labels_path = sys.argv[1:5]
image = Image.open(image_path).convert("RGB")
scale = 232 / min(image.size)
image = image.resize((round(image.width * scale), round(image.height * scale)), Image.Resampling.BILINEAR)
left, top = (image.width - 224) // 2, (image.height - 224) // 2
pixels = np.asarray(image.crop((left, top, left + 224, top + 224)), dtype=np.float32) / 255
pixels = (
    ((pixels - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]).transpose(2, 0, 1)[None].astype(np.float32)
)
tensor = http.InferInput("input", list(pixels.shape), "FP32")
tensor.set_data_from_numpy(pixels)
output = http.InferRequestedOutput("output")
body, header = http.InferenceServerClient.generate_request_body([tensor], outputs=[output])
reply = boto3.client("sagemaker-runtime").invoke_endpoint(
    EndpointName=endpoint,
    TargetModel=target,
    Body=body,
    ContentType=f"application/vnd.sagemaker-triton.binary+json;json-header-size={header}",
)
length = int(reply["ContentType"].rsplit("=", 1)[1])
result = http.InferenceServerClient.parse_response_body(reply["Body"].read(), header_length=length)
scores = result.as_numpy("output")[0].astype(np.float64)
probabilities = np.exp(scores - scores.max())
probabilities /= probabilities.sum()
with open(labels_path, encoding="utf-8") as stream:
    labels = json.load(stream)
for rank, index in enumerate(np.argsort(-probabilities, kind="stable")[:5], start=1):
    print(f"{rank}. {probabilities[index]:.2%} {labels[index]}")

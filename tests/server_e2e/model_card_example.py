# The model card's usage example: one image as a base64 data: URL plus a text part,
# POSTed to /v1/chat/completions with Python `requests` (Debian's python3-requests).
# Started by run.sh (mm suite): model_card_example.py BASE_URL API_KEY IMAGE MODEL
# Prints the response body; exits 1 unless it is a chat completion.
import base64
import json
import sys

import requests

base_url, api_key, image_path, model = sys.argv[1:5]

with open(image_path, "rb") as f:
    image_b64 = base64.b64encode(f.read()).decode("utf-8")

response = requests.post(
    f"{base_url}/v1/chat/completions",
    headers={"Authorization": f"Bearer {api_key}"},
    json={
        "model": model,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image_b64}"}},
                    {"type": "text", "text": "Describe this image."},
                ],
            }
        ],
        "max_tokens": 32,
    },
    timeout=120,
)
body = response.json()
print(json.dumps(body))
if response.status_code != 200 or body.get("object") != "chat.completion":
    sys.exit(f"model card example: HTTP {response.status_code}: {response.text[:500]}")
print("model card example: " + repr(body["choices"][0]["message"]["content"])[:200], file=sys.stderr)

#!/usr/bin/env python3
"""Verify captured PayPipe webhook requests with the Standard Webhooks reference library (PyPI `standardwebhooks`).

Interoperability check for CI: PayPipe's signatures must verify with the spec's own verifier, not only with ours.

usage: scripts/verify-webhooks.py [--schema docs/schemas/event.schema.json] CAPTURE.json [CAPTURE.json ...]

Each capture is a JSON object: {"secret": "whsec_...", "headers": {"webhook-id": ..., "webhook-timestamp": ...,
"webhook-signature": ...}, "body_base64": "..."} (the exact request bytes). Exit 0 if every capture verifies,
1 if one does not (or, with --schema, a verified body does not match the JSON Schema; needs the `jsonschema`
package), 2 on usage errors or when the library is missing (pip install standardwebhooks).
"""
import base64
import json
import sys

try:
    from standardwebhooks.webhooks import Webhook, WebhookVerificationError
except ImportError:
    print("standardwebhooks is not installed (python3 -m pip install standardwebhooks)", file=sys.stderr)
    sys.exit(2)


def verify(path: str, schema) -> bool:
    with open(path, "r", encoding="utf-8") as handle:
        capture = json.load(handle)
    body = base64.b64decode(capture["body_base64"])
    try:
        payload = Webhook(capture["secret"]).verify(body, capture["headers"])
    except WebhookVerificationError as error:
        print(f"{path}: NOT verified: {error}")
        return False
    if schema is not None:
        import jsonschema

        try:
            jsonschema.validate(payload, schema)
        except jsonschema.ValidationError as error:
            print(f"{path}: verified but does not match the event schema: {error.message}")
            return False
    print(f"{path}: verified {capture['headers'].get('webhook-id')} type={payload.get('type')}")
    return True


def main(arguments: list) -> int:
    schema = None
    if arguments[:1] == ["--schema"] and len(arguments) >= 2:
        with open(arguments[1], "r", encoding="utf-8") as handle:
            schema = json.load(handle)
        arguments = arguments[2:]
    if not arguments:
        print(__doc__, file=sys.stderr)
        return 2
    results = [verify(path, schema) for path in arguments]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Publish one payment job, wait for its result on paypipe.results by correlation id, and verify its webhook.

What a backend does (docs/job-contract.md "Receiving results"):
  1. serves its webhook endpoint (here a tiny HTTP listener on 127.0.0.1, given as the job's notifyUrl; PayPipe's
     sandbox delivers to loopback, production refuses private targets) and verifies each request's Standard Webhooks
     signature with the merchant's webhook secret;
  2. declares its own queue bound to paypipe.results by `payment.*.<merchantId>` (one merchant's results only)
     BEFORE publishing, so the result cannot pass by unseen;
  3. publishes the job as examples/publish_job.py does (publisher confirms);
  4. takes the message whose correlation_id is the jobId (headers merchantId, jobId, paymentId, type say the rest)
     and deduplicates by its message_id, the event id, which is also the webhook's webhook-id.

    await_result.py --token token.json --merchant-id sandbox-merchant --webhook-secret whsec_... \
                    --job-id order-1-a1 --amount 1000 --currency GBP [--timeout 120]

Prints one JSON line; exit 0 when both the result and the verified webhook arrived, 1 when not within --timeout,
64 usage, 65 bad input, 69 broker unavailable.
"""
import argparse
import base64
import hashlib
import hmac
import http.server
import json
import os
import queue
import sys
import threading
import time
import urllib.parse

import pika

from publish_job import build_job, publish

RESULTS_EXCHANGE = "paypipe.results"
TOLERANCE_SECONDS = 300  # Standard Webhooks: refuse timestamps this far from now (replays)


def verify_webhook(secret, headers, body):
    """True when one of webhook-signature's v1 signatures is HMAC-SHA256(secret, "id.timestamp.body")."""
    webhook_id, timestamp, signatures = (headers.get(name) for name in ("webhook-id", "webhook-timestamp", "webhook-signature"))
    if not (webhook_id and timestamp and signatures) or not timestamp.isdigit():
        return False
    if abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
        return False
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = base64.b64encode(hmac.new(key, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()).decode()
    return any(hmac.compare_digest(expected, candidate.partition(",")[2])
               for candidate in signatures.split(" ") if candidate.startswith("v1,"))


def start_webhook_listener(secret, received):
    """Serves POST /webhook on an ephemeral loopback port; verified events go to `received`, others get 401."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {name.lower(): value for name, value in self.headers.items()}
            if not verify_webhook(secret, headers, body):
                self.send_response(401)
                self.end_headers()
                return
            received.put((headers["webhook-id"], json.loads(body)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def bind_results_queue(channel, amqp_url, merchant_id, job_id):
    """A queue of this backend's own (named `<user>.…`, as scripts/broker-permissions' reader role requires) bound to
    one merchant's results: `payment.*.<merchantId>` is exact even when merchant ids contain dots."""
    user = urllib.parse.urlparse(amqp_url).username or "guest"
    name = f"{urllib.parse.unquote(user)}.result-{job_id}"
    channel.queue_declare(name, exclusive=True, auto_delete=True)
    channel.queue_bind(name, RESULTS_EXCHANGE, routing_key=f"payment.*.{merchant_id}")
    return name


def wait_for_result(channel, queue_name, job_id, deadline):
    """The first message whose correlation_id is `job_id`; others (the merchant's other jobs) are acked and skipped."""
    seen = set()
    while time.monotonic() < deadline:
        method, properties, body = channel.basic_get(queue_name, auto_ack=True)
        if method is None:
            channel.connection.sleep(0.2)
            continue
        if properties.correlation_id != job_id or properties.message_id in seen:
            continue
        seen.add(properties.message_id)  # the event id: a redelivered copy has the same one
        return properties, json.loads(body)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--token", required=True, help="an Apple Pay token JSON file (`paypipe token mint --out`)")
    parser.add_argument("--job-id", required=True)
    parser.add_argument("--merchant-id", required=True)
    parser.add_argument("--webhook-secret", default=os.environ.get("PAYPIPE_WEBHOOK_SECRET"), help="the merchant's whsec_… secret")
    parser.add_argument("--amount", type=int, required=True, help="minor units")
    parser.add_argument("--currency", required=True, help="ISO 4217 alpha-3")
    parser.add_argument("--timeout", type=float, default=120, help="seconds to wait for the result and the webhook")
    parser.add_argument("--amqp-url", default=os.environ.get("PAYPIPE_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f"))
    args = parser.parse_args()
    if not args.webhook_secret:
        parser.error("--webhook-secret (or PAYPIPE_WEBHOOK_SECRET) is required")
    started = time.monotonic()
    webhooks = queue.Queue()
    server = start_webhook_listener(args.webhook_secret, webhooks)
    args.job, args.order_reference = None, None
    args.notify_url = f"http://127.0.0.1:{server.server_address[1]}/webhook"
    try:
        job = build_job(args)
    except (OSError, ValueError) as error:
        print(f"await_result: {error}", file=sys.stderr)
        return 65
    try:
        connection = pika.BlockingConnection(pika.URLParameters(args.amqp_url))
        channel = connection.channel()
        queue_name = bind_results_queue(channel, args.amqp_url, args.merchant_id, args.job_id)
        publish(args.amqp_url, job)
        deadline = started + args.timeout
        result = wait_for_result(channel, queue_name, args.job_id, deadline)
        connection.close()
    except (pika.exceptions.AMQPError, OSError) as error:
        print(f"await_result: broker: {error!r}", file=sys.stderr)
        return 69
    webhook = None
    if result is not None:
        properties, _ = result
        # The webhook may come before or after the results message; the event id pairs them.
        while webhook is None and time.monotonic() < deadline:
            try:
                webhook_id, event = webhooks.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if webhook_id == properties.message_id:
                webhook = event
    server.shutdown()
    summary = {"jobId": args.job_id, "seconds": round(time.monotonic() - started, 2)}
    if result is not None:
        properties, event = result
        summary.update(type=properties.headers.get("type"), eventId=properties.message_id,
                       paymentId=properties.headers.get("paymentId"), status=event["data"].get("status"))
    summary["webhookVerified"] = webhook is not None
    print(json.dumps(summary))
    return 0 if result is not None and webhook is not None else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Publish one PayPipe payment job exactly as docs/asyncapi.yaml describes.

Exchange paypipe.jobs (direct), routing key payment.requested, delivery_mode 2 (persistent),
content_type application/json, message_id = jobId, timestamp = now (the token freshness clock), mandatory, publisher confirms: the job counts as
handed over only once the broker has confirmed it. Republishing after a missing confirm is safe, since
jobId is the idempotency key.

    publish_job.py --job job.json
    publish_job.py --token token.json --job-id order-1-a1 --merchant-id sandbox-merchant \
                   --order-reference order-1 --amount 1099 --currency GBP

Exit codes: 0 confirmed, 64 usage, 65 bad input file, 69 broker unavailable/unroutable/nacked.
"""
import argparse
import json
import os
import sys
import time

import pika

EXCHANGE = "paypipe.jobs"
ROUTING_KEY = "payment.requested"


def build_job(args):
    """A job from --job FILE, or built around an Apple Pay token from --token FILE."""
    if args.job:
        with open(args.job, "rb") as handle:
            job = json.load(handle)
        if not isinstance(job, dict) or not isinstance(job.get("jobId"), str):
            raise ValueError(f"{args.job}: not a job object with a string jobId")
        return job
    with open(args.token, "rb") as handle:
        token = json.load(handle)
    missing = [name for name in ("job_id", "merchant_id", "amount", "currency") if getattr(args, name) is None]
    if missing:
        raise ValueError("--token needs " + ", ".join("--" + name.replace("_", "-") for name in missing))
    job = {
        "jobId": args.job_id,
        "merchantId": args.merchant_id,
        "orderReference": args.order_reference or args.job_id[:64],
        "amount": {"value": args.amount, "currency": args.currency},
        "applePayToken": token,
    }
    if args.notify_url:
        job["notifyUrl"] = args.notify_url
    return job


def publish(amqp_url, job):
    """Publishes with confirms; raises on nack, unroutable or connection failure."""
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.basic_publish(
            exchange=EXCHANGE,
            routing_key=ROUTING_KEY,
            body=json.dumps(job, separators=(",", ":")).encode("utf-8"),
            properties=pika.BasicProperties(
                content_type="application/json",
                delivery_mode=2,
                message_id=job["jobId"],
                timestamp=int(time.time()),
            ),
            mandatory=True,
        )
    finally:
        connection.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--job", help="a job JSON file (docs/schemas/job.schema.json)")
    source.add_argument("--token", help="an Apple Pay token JSON file (e.g. from `paypipe token mint --out`)")
    parser.add_argument("--job-id")
    parser.add_argument("--merchant-id")
    parser.add_argument("--order-reference")
    parser.add_argument("--amount", type=int, help="minor units")
    parser.add_argument("--currency", help="ISO 4217 alpha-3")
    parser.add_argument("--notify-url")
    parser.add_argument("--amqp-url", default=os.environ.get("PAYPIPE_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f"))
    args = parser.parse_args()
    try:
        job = build_job(args)
    except (OSError, ValueError) as error:
        print(f"publish_job: {error}", file=sys.stderr)
        return 65
    try:
        publish(args.amqp_url, job)
    except (pika.exceptions.AMQPError, OSError) as error:
        print(f"publish_job: not confirmed: {error!r}", file=sys.stderr)
        return 69
    print(json.dumps({"jobId": job["jobId"], "confirmed": True}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

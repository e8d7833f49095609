#!/usr/bin/env python3
"""Captures AMQP messages to a file for the card-data hygiene check (scripts/hygiene).

  capture_messages.py firehose AMQP_URL QUEUE OUT   consume QUEUE (bound to amq.rabbitmq.trace) until SIGTERM,
                                                    reconnecting across broker restarts
  capture_messages.py peek AMQP_URL OUT QUEUE…      append every message of the QUEUEs (basic.get, then requeued)
  capture_messages.py bind AMQP_URL QUEUE EXCHANGE KEY   declare a durable quorum QUEUE bound to EXCHANGE with KEY
  capture_messages.py purge AMQP_URL QUEUE…         empty the QUEUEs (one connection: faster than rabbitmqctl)

Each message is appended as one JSON line of its properties/headers (str()-ed, so header values are searchable
as text) followed by the raw body and a newline: searching the file finds a secret in either.
"""
import json
import signal
import sys
import time

import pika


def record(out, properties, body, extra):
    meta = dict(extra)
    meta["message_id"] = getattr(properties, "message_id", None)
    meta["headers"] = getattr(properties, "headers", None)
    out.write(json.dumps(meta, default=str).encode() + b"\n")
    out.write(body)
    out.write(b"\n")


def firehose(url, queue, path):
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    count = 0
    with open(path, "ab") as out:
        while not stopping:
            try:
                connection = pika.BlockingConnection(pika.URLParameters(url))
                channel = connection.channel()
                channel.queue_declare(queue, durable=True)
                channel.queue_bind(queue, "amq.rabbitmq.trace", "publish.#")
                channel.basic_qos(prefetch_count=500)
                while not stopping:
                    for method, properties, body in channel.consume(queue, inactivity_timeout=0.5):
                        if method is None:
                            break
                        record(out, properties, body, {"trace": method.routing_key})
                        channel.basic_ack(method.delivery_tag)
                        count += 1
                        if stopping:
                            break
                    out.flush()
                # Drain what is left, then leave.
                while True:
                    method, properties, body = channel.basic_get(queue, auto_ack=True)
                    if method is None:
                        break
                    record(out, properties, body, {"trace": method.routing_key})
                    count += 1
                connection.close()
            except Exception as error:  # broker restarting: try again
                if not stopping:
                    print(f"capture: {type(error).__name__}, reconnecting", file=sys.stderr)
                    time.sleep(1)
    print(f"capture: {count} messages", file=sys.stderr)


def peek(url, path, queues):
    connection = pika.BlockingConnection(pika.URLParameters(url))
    result = {}
    with open(path, "ab") as out:
        for queue in queues:
            channel = connection.channel()
            messages = []
            while True:
                method, properties, body = channel.basic_get(queue, auto_ack=False)
                if method is None:
                    break
                record(out, properties, body, {"queue": queue})
                headers = properties.headers or {}
                try:
                    payment = json.loads(body).get("data", {}).get("paymentId")
                except (ValueError, AttributeError):
                    payment = None
                messages.append({"message_id": properties.message_id, "payment_id": payment,
                                 "code": str(headers.get("x-paypipe-error-code", "")) or None})
            channel.close()  # unacked messages go back to the queue
            result[queue] = messages
    connection.close()
    print(json.dumps(result))


def bind(url, queue, exchange, key):
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
    channel.queue_bind(queue, exchange, key)
    connection.close()


def purge(url, queues):
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    for queue in queues:
        channel.queue_purge(queue)
    connection.close()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "purge":
        purge(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 6 and sys.argv[1] == "bind":
        bind(*sys.argv[2:])
    elif len(sys.argv) >= 5 and sys.argv[1] == "firehose":
        firehose(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 4 and sys.argv[1] == "peek":
        peek(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(64)

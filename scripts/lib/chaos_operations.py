#!/usr/bin/env python3
"""Operations in a chaos run (issue 19): captures, voids and partial refunds of the run's authorised payments, some
published twice, some concurrently for one payment, then the checks.

  chaos_operations.py publish AMQP_URL DATABASE_URL PREFIX OUT.jsonl   publish the operations, record what was published
  chaos_operations.py check DATABASE_URL SIMULATOR_URL OUT.jsonl TIMEOUT  wait for them, then assert:
    - the simulator's operation ledger (GET /_sim/operations) holds at most one gateway operation per operation (its
      request reference names the attempt, `O<attempt>-…`, which names the operation);
    - the lifecycle invariants hold (captured <= authorised, refunded <= captured), and each payment's refunded amount
      is exactly the sum of its succeeded refunds;
    - every operation ended (succeeded or failed) with its event delivered (notified), or is for review (a lost REFUND
      answer: never resent; counted apart).
Prints one JSON summary line; exits 1 if a check failed.
"""
import json
import subprocess
import sys
import time
import urllib.request

import pika


def psql(url, sql):
    out = subprocess.run(["psql", url, "-Atq", "-F", "\t", "-c", sql], check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def publish(amqp_url, database_url, prefix, out_path):
    rows = psql(database_url, f"""SELECT id, amount_minor FROM payments WHERE merchant_id = 'sandbox-merchant' AND status = 'authorized'
                                  AND left(job_id, {len(prefix) + 1}) = '{prefix}-' ORDER BY job_id LIMIT 240""")
    plan = []
    for n, (payment, amount) in enumerate(rows):
        amount = int(amount)
        base = f"{prefix}-op{n}"
        if n % 4 == 0:      # a void, published twice
            plan += [("void", f"{base}-void", payment, None)] * 2
        elif n % 4 == 1:    # three partial refunds of one payment at once
            plan += [("refund", f"{base}-r{i}", payment, max(1, amount // 3)) for i in range(3)]
        elif n % 4 == 2:    # a full refund published twice, and a capture (already captured automatically)
            plan += [("refund", f"{base}-full", payment, None)] * 2 + [("capture", f"{base}-cap", payment, None)]
        else:               # an over-refund: refused
            plan += [("refund", f"{base}-over", payment, amount + 1)]
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    channel = connection.channel()
    channel.confirm_delivery()
    with open(out_path, "w") as out:
        for kind, operation_id, payment, amount in plan:
            body = {"operationId": operation_id, "merchantId": "sandbox-merchant", "paymentId": payment}
            if amount is not None:
                body["amount"] = amount
            channel.basic_publish("paypipe.jobs", f"payment.{kind}.requested", json.dumps(body).encode(), pika.BasicProperties(
                delivery_mode=2, content_type="application/json", message_id=operation_id), mandatory=True)
            out.write(json.dumps({"kind": kind, "operationId": operation_id, "paymentId": payment, "amount": amount}) + "\n")
    connection.close()
    print(json.dumps({"operationsPublished": len(plan), "distinctOperations": len({p[1] for p in plan}), "payments": len(rows)}))


def check(database_url, simulator_url, ops_path, timeout):
    published = [json.loads(line) for line in open(ops_path)]
    ids = sorted({p["operationId"] for p in published})
    quoted = ",".join("'" + i.replace("'", "''") + "'" for i in ids) or "''"
    deadline = time.time() + timeout
    while True:
        rows = psql(database_url, f"""SELECT operation_id, state, notified_at IS NOT NULL, coalesce(error_code, '') FROM payment_operations
                                      WHERE merchant_id = 'sandbox-merchant' AND operation_id IN ({quoted})""")
        done = [r for r in rows if (r[1] in ("succeeded", "failed") and r[2] == "t") or r[1] == "needs_review"]
        if len(done) == len(ids) or time.time() > deadline:
            break
        time.sleep(1)
    states = {}
    for r in rows:
        states[r[1]] = states.get(r[1], 0) + 1
    unfinished = sorted(set(ids) - {r[0] for r in done})
    ledger = json.load(urllib.request.urlopen(f"{simulator_url}/_sim/operations"))["operations"]
    attempts = {int(a): o for a, o in psql(database_url, """SELECT a.id, o.operation_id FROM operation_attempts a
                                                             JOIN payment_operations o ON o.id = a.operation_id""")}
    per_operation = {}
    unattributed = 0
    for entry in ledger:
        reference = entry.get("requestreference") or ""
        head = reference.split("-")[0]
        if head.startswith("O") and head[1:].isdigit() and int(head[1:]) in attempts:
            operation = attempts[int(head[1:])]
            per_operation[operation] = per_operation.get(operation, 0) + 1
        else:
            unattributed += 1   # the upkeep's suspensions (U…), which are no operation
    duplicates = {o: n for o, n in per_operation.items() if n > 1}
    violations = psql(database_url, """SELECT count(*) FROM payments WHERE lifecycle IS NOT NULL
                                       AND NOT (captured_minor BETWEEN 0 AND authorized_minor AND refunded_minor BETWEEN 0 AND captured_minor)""")[0][0]
    mismatched = psql(database_url, """SELECT count(*) FROM payments p WHERE p.lifecycle IS NOT NULL AND p.refunded_minor <>
                                       coalesce((SELECT sum(event_amount) FROM payment_operations o WHERE o.payment_id = p.id AND o.state = 'succeeded'
                                                 AND o.event_type = 'payment.refunded'), 0)""")[0][0]
    summary = {
        "operations": len(ids), "states": states, "unfinished": len(unfinished), "gatewayOperations": len(ledger),
        "duplicateGatewayOperations": len(duplicates), "invariantViolations": int(violations) + int(mismatched),
        "forReview": states.get("needs_review", 0), "notOperations": unattributed,
    }
    print(json.dumps(summary))
    failed = unfinished or duplicates or int(violations) or int(mismatched)
    if unfinished:
        print(f"unfinished operations: {unfinished[:10]}", file=sys.stderr)
    if duplicates:
        print(f"operations sent more than once: {list(duplicates.items())[:10]}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1] == "publish":
        publish(*sys.argv[2:6])
    elif sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])))
    else:
        sys.exit(f"usage: {sys.argv[0]} publish|check …")

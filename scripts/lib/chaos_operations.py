#!/usr/bin/env python3
"""Operations in a chaos run (docs/chaos.md): captures, voids and partial refunds of the run's authorised payments of the
Trust Payments, OPP and TapPay sandbox merchants, some published twice, some concurrently for one payment, then the
checks. Used by `scripts/chaos [short|full]` and `scripts/chaos adversarial`.

  chaos_operations.py publish AMQP_URL DATABASE_URL PREFIX OUT.jsonl PAYPIPE [--now]
      publish, record what was published; exits 3 without publishing while a merchant has no authorised payment of the
      run yet (the caller retries), unless --now
  chaos_operations.py check DATABASE_URL SIMULATOR_URL OUT.jsonl TIMEOUT           wait for them, then assert (exit 1 if not):
    - the simulator's operation ledger (GET /_sim/operations) holds at most one gateway operation per operation, so no
      payment has a doubled one: a Trust Payments request reference names the attempt (`O<attempt>-…`), an OPP
      merchantTransactionId the operation's row (`…-op<row>`); TapPay requests carry no PayPipe reference, so each
      authorisation has at most as many captures and refunds as PayPipe sent (its succeeded or for-review operations);
    - the lifecycle invariants hold: captured <= authorised, refunded <= captured (so concurrent partial refunds never
      exceed the total), each payment's refunded amount is exactly the sum of its succeeded refunds, no refund of a
      voided payment (in PayPipe, and on the gateway's ledger: no REFUND of an AUTH a TRANSACTIONUPDATE cancelled);
    - every operation ended (succeeded or failed) with its event delivered (notified), or is for review (a lost REFUND
      answer: never resent; counted apart);
    - every face's money per payment (GET /_sim/payments: refunded, voided, Trust Payments' settled amount) is what
      PayPipe recorded, so no payment had an operation carried out twice under any reference;

What is planned follows the connector's capabilities as `paypipe merchant show` reports them (ConnectorKind.capabilities):
no void where there is no void API (TapPay), full captures only where partial ones are unsupported, partial refunds only
where supported, amounts in units the currency can express (TWD in whole dollars at TapPay).
Prints one JSON summary line.
"""
import json
import re
import subprocess
import sys
import time
import urllib.request

import pika

MERCHANTS = ("sandbox-merchant", "sandbox-merchant-opp", "sandbox-merchant-tappay")
# The ledger's request types per operation kind: Trust Payments names its own in `requestreference`; OPP's carry the
# operation's row in their merchantTransactionId (`<payment reference>-op<row>`); TapPay's carry no PayPipe reference,
# so they are counted per authorisation (`rec_trade_id`) against that payment's operations of the kind.
CONNECTOR_KINDS = {"CP": "capture", "RV": "void", "RF": "refund", "cap": "capture", "refund": "refund"}
PER_MERCHANT = 120   # authorised payments per merchant that get operations
WHOLE_UNITS = {"TWD": 100}   # minor units per unit the connector sends (TapPay sends TWD in whole dollars)


def psql(url, sql):
    out = subprocess.run(["psql", url, "-Atq", "-F", "\t", "-c", sql], check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def capabilities(paypipe, merchant):
    """The merchant's connector and what it supports (`paypipe merchant show`'s `connector`)."""
    shown = json.loads(subprocess.run([paypipe, "merchant", "show", merchant], check=True, capture_output=True, text=True).stdout)
    return shown["connector"]


def plan_for(n, payment, amount, currency, caps, base):
    """The operations of the `n`-th payment of a merchant: (kind, operationId, paymentId, amount) in publish order."""
    unit = WHOLE_UNITS.get(currency, 1)
    part = max(unit, amount // 3 // unit * unit)
    if n % 4 == 0:
        if caps["void"]:          # a void, published twice
            return [("void", f"{base}-void", payment, None)] * 2
        return [("refund", f"{base}-part", payment, part)] * 2   # no void API: a partial refund published twice
    if n % 4 == 1:
        if caps["refund"] == "partial":   # three partial refunds of one payment at once
            return [("refund", f"{base}-r{i}", payment, part) for i in range(3)]
        return [("refund", f"{base}-full", payment, None)] * 2
    if n % 4 == 2:                # a full refund published twice, and a capture (already captured automatically)
        operations = [("refund", f"{base}-full", payment, None)] * 2
        return operations + ([("capture", f"{base}-cap", payment, None)] if caps["capture"] != "none" else [])
    return [("refund", f"{base}-over", payment, amount + unit)]   # an over-refund: refused


def publish(amqp_url, database_url, prefix, out_path, paypipe="paypipe", now=None):
    plan, payments = [], 0
    authorised = {merchant: psql(database_url, f"""SELECT id, amount_minor, currency FROM payments WHERE merchant_id = '{merchant}'
                                                 AND status = 'authorized' AND left(job_id, {len(prefix) + 1}) = '{prefix}-'
                                                 ORDER BY job_id LIMIT {PER_MERCHANT}""") for merchant in MERCHANTS}
    if now != "--now" and not all(authorised.values()):
        print(json.dumps({"waitingFor": [m for m, rows in authorised.items() if not rows]}))
        return 3
    for merchant in MERCHANTS:
        caps = capabilities(paypipe, merchant)
        rows = authorised[merchant]
        payments += len(rows)
        for n, (payment, amount, currency) in enumerate(rows):
            plan += [(merchant, caps["type"]) + op for op in plan_for(n, payment, int(amount), currency, caps, f"{prefix}-{caps['type']}-op{n}")]
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    channel = connection.channel()
    channel.confirm_delivery()
    with open(out_path, "w") as out:
        for merchant, connector, kind, operation_id, payment, amount in plan:
            body = {"operationId": operation_id, "merchantId": merchant, "paymentId": payment}
            if amount is not None:
                body["amount"] = amount
            channel.basic_publish("paypipe.jobs", f"payment.{kind}.requested", json.dumps(body).encode(), pika.BasicProperties(
                delivery_mode=2, content_type="application/json", message_id=operation_id), mandatory=True)
            out.write(json.dumps({"kind": kind, "operationId": operation_id, "merchantId": merchant, "connector": connector,
                                  "paymentId": payment, "amount": amount}) + "\n")
    connection.close()
    print(json.dumps({"operationsPublished": len(plan), "distinctOperations": len({p[3] for p in plan}), "payments": payments}))
    return 0


def check(database_url, simulator_url, ops_path, timeout):
    published = [json.loads(line) for line in open(ops_path)]
    # Older files (Trust Payments only) name neither merchant nor connector.
    connector_of = {p["operationId"]: p.get("connector", "trustpayments") for p in published}
    merchant_of = {p["operationId"]: p.get("merchantId", "sandbox-merchant") for p in published}
    ids = sorted(connector_of)
    quoted = ",".join("'" + i.replace("'", "''") + "'" for i in ids) or "''"
    merchants = ",".join(f"'{m}'" for m in sorted(set(merchant_of.values())) or ["''"])
    deadline = time.time() + timeout
    while True:
        rows = psql(database_url, f"""SELECT operation_id, merchant_id, state, notified_at IS NOT NULL, coalesce(error_code, '') FROM payment_operations
                                      WHERE merchant_id IN ({merchants}) AND operation_id IN ({quoted})""")
        rows = [r for r in rows if merchant_of.get(r[0]) == r[1]]
        done = [r for r in rows if (r[2] in ("succeeded", "failed") and r[3] == "t") or r[2] == "needs_review"]
        if len(done) == len(ids) or time.time() > deadline:
            break
        time.sleep(1)
    states, per_connector = {}, {}
    for r in rows:
        states[r[2]] = states.get(r[2], 0) + 1
        counts = per_connector.setdefault(connector_of[r[0]], {})
        counts[r[2]] = counts.get(r[2], 0) + 1
    unfinished = sorted(set(ids) - {r[0] for r in done})
    ledger = json.load(urllib.request.urlopen(f"{simulator_url}/_sim/operations", timeout=30))["operations"]
    attempts = {int(a): (o, p) for a, o, p in psql(database_url, """SELECT a.id, o.operation_id, o.payment_id FROM operation_attempts a
                                                                   JOIN payment_operations o ON o.id = a.operation_id""")}
    rows_by_id = {int(i): (o, p) for i, o, p in psql(database_url, "SELECT id, operation_id, payment_id FROM payment_operations")}
    # TapPay: how many operations of each kind each authorisation may have had sent (any that did not fail unsent).
    allowed_per_trade = {(t, k): int(n) for t, k, n in psql(database_url, """SELECT transaction_reference, kind, count(*) FROM payment_operations
                                                                             WHERE transaction_reference IS NOT NULL AND state IN ('succeeded', 'needs_review')
                                                                             GROUP BY 1, 2""")}
    per_operation, payment_of, per_trade = {}, {}, {}
    unattributed = 0
    for entry in ledger:
        reference = entry.get("requestreference") or ""
        head = reference.split("-")[0]
        opp_row = re.search(r"-op(\d+)$", reference)
        kind = CONNECTOR_KINDS.get(entry.get("requesttypedescription"))
        if head.startswith("O") and head[1:].isdigit() and int(head[1:]) in attempts:
            operation, payment = attempts[int(head[1:])]
        elif entry.get("connector") == "opp" and opp_row and int(opp_row.group(1)) in rows_by_id:
            operation, payment = rows_by_id[int(opp_row.group(1))]
        elif entry.get("connector") == "tappay" and kind:
            key = (entry.get("transactionreference"), kind)
            per_trade[key] = per_trade.get(key, 0) + 1
            continue
        else:
            unattributed += 1   # the upkeep's suspensions (U…), which are no operation
            continue
        per_operation[operation] = per_operation.get(operation, 0) + 1
        payment_of[operation] = payment
    duplicates = {o: n for o, n in per_operation.items() if n > 1}
    trade_payment = dict(psql(database_url, """SELECT DISTINCT transaction_reference, payment_id::text FROM payment_operations
                                               WHERE transaction_reference IS NOT NULL"""))
    for (trade, kind), n in per_trade.items():
        if n > allowed_per_trade.get((trade, kind), 0):
            duplicates[f"tappay {kind} of {trade}"] = n
            payment_of[f"tappay {kind} of {trade}"] = trade_payment.get(trade, trade)
    # No refund of a voided payment, on the gateway's ledger: a REFUND whose parent a TRANSACTIONUPDATE set to 3.
    cancelled = {e.get("transactionreference") for e in ledger
                 if e.get("requesttypedescription") == "TRANSACTIONUPDATE" and (e.get("updates") or {}).get("settlestatus") == "3"}
    refunds_of_cancelled = [e for e in ledger if e.get("requesttypedescription") == "REFUND" and e.get("transactionreference") in cancelled]
    violations = psql(database_url, """SELECT count(*) FROM payments WHERE lifecycle IS NOT NULL
                                       AND NOT (captured_minor BETWEEN 0 AND authorized_minor AND refunded_minor BETWEEN 0 AND captured_minor)""")[0][0]
    mismatched = psql(database_url, """SELECT count(*) FROM payments p WHERE p.lifecycle IS NOT NULL AND p.refunded_minor <>
                                       coalesce((SELECT sum(event_amount) FROM payment_operations o WHERE o.payment_id = p.id AND o.state = 'succeeded'
                                                 AND o.event_type = 'payment.refunded'), 0)""")[0][0]
    voided_refunded = psql(database_url, """SELECT count(*) FROM payments p WHERE p.lifecycle = 'voided' AND (p.refunded_minor > 0 OR EXISTS (
                                            SELECT 1 FROM payment_operations o WHERE o.payment_id = p.id AND o.state = 'succeeded'
                                            AND o.event_type = 'payment.refunded'))""")[0][0]
    invariant_violations = int(violations) + int(mismatched) + int(voided_refunded) + len(refunds_of_cancelled)
    disagreeing, compared = gateway_agrees(database_url, simulator_url, {p["paymentId"] for p in published},
                                           {r[0] for r in rows if r[2] not in ("succeeded", "failed")} | set(unfinished), published)
    summary = {
        "operations": len(ids), "states": states, "perConnector": per_connector, "unfinished": len(unfinished),
        "gatewayOperations": len(ledger), "duplicateGatewayOperations": len(duplicates),
        "paymentsWithADoubledOperation": len({payment_of[o] for o in duplicates}),
        "paymentsComparedWithTheGateway": compared, "paymentsTheGatewayDisagreesWith": len(disagreeing),
        "invariantViolations": invariant_violations, "forReview": states.get("needs_review", 0), "notOperations": unattributed,
    }
    print(json.dumps(summary))
    if unfinished:
        print(f"unfinished operations: {unfinished[:10]}", file=sys.stderr)
    if duplicates:
        print(f"operations sent more than once: {list(duplicates.items())[:10]}", file=sys.stderr)
    if invariant_violations:
        print(f"invariants: bounds {violations}, refunded != succeeded refunds {mismatched}, voided but refunded {voided_refunded}, "
              f"gateway REFUNDs of cancelled AUTHs {len(refunds_of_cancelled)}", file=sys.stderr)
    if disagreeing:
        print(f"payments whose money at the gateway differs from PayPipe's: {disagreeing[:10]}", file=sys.stderr)
    return 1 if unfinished or duplicates or invariant_violations or disagreeing else 0


def gateway_agrees(database_url, simulator_url, payment_ids, open_operations, published):
    """Every face's money per authorisation (GET /_sim/payments) against PayPipe's payment: refunded the same amount,
    voided alike, and at Trust Payments the same settled (captured) amount. A refund or void that took effect twice at
    any face, whatever reference it was sent under, shows here. Payments with an operation not finished (for review:
    a lost REFUND answer is not resent, PayPipe does not know yet) are left out. Returns (disagreements, compared)."""
    if not payment_ids:
        return [], 0
    skipped = {p["paymentId"] for p in published if p["operationId"] in open_operations}
    quoted = ",".join(f"'{p}'" for p in sorted(payment_ids - skipped)) or "NULL"
    ours = {pid: (lifecycle, int(captured), int(refunded)) for pid, lifecycle, captured, refunded in psql(database_url, f"""
        SELECT id, coalesce(lifecycle, ''), captured_minor, refunded_minor FROM payments WHERE id IN ({quoted}) AND lifecycle IS NOT NULL""")}
    payment_of = dict(psql(database_url, f"""SELECT DISTINCT order_reference, payment_id::text FROM gateway_attempts
                                           WHERE payment_id IN ({quoted}) AND request_type <> 'TRANSACTIONQUERY'"""))
    money = json.load(urllib.request.urlopen(f"{simulator_url}/_sim/payments", timeout=30))["payments"]
    disagreeing, compared = [], set()
    for entry in money:
        pid = payment_of.get(entry.get("reference"))
        if pid not in ours or entry["amount"] == 0:
            continue
        lifecycle, captured, refunded = ours[pid]
        compared.add(pid)
        voided = lifecycle == "voided"
        settled_differs = entry["face"] == "trustpayments" and not voided and entry["settled"] != captured
        if entry["refunded"] != refunded or entry["voided"] != voided or settled_differs:
            disagreeing.append(f"{pid} ({entry['face']}): gateway {entry}, PayPipe {lifecycle} captured {captured} refunded {refunded}")
    return disagreeing, len(compared)


if __name__ == "__main__":
    if sys.argv[1] == "publish":
        sys.exit(publish(*sys.argv[2:8]))
    elif sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])))
    else:
        sys.exit(f"usage: {sys.argv[0]} publish|check …")

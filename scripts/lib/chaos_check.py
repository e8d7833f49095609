#!/usr/bin/env python3
"""The assertions of scripts/chaos, after the run has converged (or timed out).

  chaos_check.py --prefix P --jobs JOBS.jsonl --receiver-log LOG --simulator URL --queues QUEUES.txt
                 --dlq DLQ.json --elapsed SECONDS

JOBS.jsonl is `paypipe job publish --sample` output (the oracle: each job's kind and its merchant's connector say where it
must end, scripts/lib/sample_outcomes.py),
QUEUES.txt `rabbitmqctl list_queues name messages`, DLQ.json `capture_messages.py peek` output. Prints one table
and exits 1 if any must-be-zero count is not zero.
"""
import argparse
import collections
import json
import sys
import urllib.request

from chaos_ledger import psql, sent_references
from sample_outcomes import (DEAD_LETTERED, OLDEST_FRESH_PRIME, TERMINAL, connectors, judge, replay_partner,
                             replay_race_won_by_partner, young_expiries)

OPERATION_EVENTS = ("payment.captured", "payment.voided", "payment.refunded", "payment.operation_failed")

def main():
    parser = argparse.ArgumentParser()
    for name in ("--prefix", "--jobs", "--receiver-log", "--simulator", "--queues", "--dlq", "--elapsed"):
        parser.add_argument(name, required=True)
    parser.add_argument("--trace-queue", default="")
    parser.add_argument("--faults", default="", help="what the run injected, printed as is")
    parser.add_argument("--results", help="capture_messages.py peek output of a queue bound to paypipe.results")
    a = parser.parse_args()

    jobs = [json.loads(line) for line in open(a.jobs) if line.strip()]
    kind = {j["jobId"]: j["kind"] for j in jobs}
    attributable = [j for j in jobs if j["kind"] not in DEAD_LETTERED]
    n = len(a.prefix) + 1
    rows = psql(f"SELECT job_id, id, status, stage, coalesce(error_code, ''), coalesce(order_reference, ''), merchant_id FROM payments "
                f"WHERE left(job_id, {n}) = '{a.prefix}-'")
    connector_of = connectors()
    payments = collections.defaultdict(list)
    for job_id, pid, status, stage, code, order, merchant in rows:
        payments[job_id].append({"id": pid, "status": status, "stage": stage, "code": code or None, "order": order,
                                 "connector": connector_of.get(merchant, "trustpayments")})

    rows_out = []   # (label, value, must_be_zero)
    def line(label, value, zero=False):
        rows_out.append((label, value, zero))

    # 1. Every job in exactly one terminal state, the one its kind says.
    lost = [j["jobId"] for j in attributable if not any(p["status"] in TERMINAL and p["stage"] == "done" for p in payments[j["jobId"]])]
    duplicated = [job for job, ps in payments.items() if len(ps) > 1]
    stray = [job for job in payments if kind.get(job) in DEAD_LETTERED or job not in kind]
    by_status = collections.Counter(p["status"] for ps in payments.values() for p in ps)
    mismatched = []
    by_connector = collections.defaultdict(collections.Counter)
    expired = 0
    for j in attributable:
        ps = payments[j["jobId"]]
        if len(ps) != 1 or ps[0]["status"] not in TERMINAL:
            continue
        by_connector[ps[0]["connector"]][ps[0]["status"]] += 1
        verdict = judge(j["kind"], ps[0]["connector"], ps[0]["status"], ps[0]["code"])
        expired += verdict == "expired"
        got = (ps[0]["status"], ps[0]["code"] if ps[0]["status"] != "authorized" else None)
        if verdict == "mismatch":
            partner = replay_partner(j["jobId"], j["kind"], kind)
            pp = payments.get(partner, []) if partner else []
            partner_got = (pp[0]["status"], pp[0]["code"] if pp[0]["status"] != "authorized" else None) if len(pp) == 1 else None
            if replay_race_won_by_partner(ps[0]["connector"], got, partner_got):
                continue
            mismatched.append(f"{j['jobId']} ({j['kind']}, {ps[0]['connector']}): {got}")
    line("jobs published", len(jobs))
    line("  attributable (must end in a terminal state)", len(attributable))
    line("  meant for the dead-letter queue", len(jobs) - len(attributable))
    for status in sorted(by_status):
        line(f"  payments {status}", by_status[status])
    for connector in sorted(by_connector):
        line(f"  {connector}: " + ", ".join(f"{s} {c}" for s, c in sorted(by_connector[connector].items())), "")
    line("  TapPay primes expired while queued (failed prime_expired, no AUTH)", expired)
    young = young_expiries(a.prefix, jobs)
    line(f"TapPay primes refused as expired younger than {OLDEST_FRESH_PRIME} s", len(young), True)
    line("lost (no terminal, notified payment)", len(lost), True)
    line("jobs with more than one payment", len(duplicated), True)
    line("payments for dead-letter jobs", len(stray), True)
    line("terminal status other than the job kind's", len(mismatched), True)
    invalid = [j["jobId"] for j in attributable if j["kind"] == "invalidJob"]

    # 2. Zero double charges: at most one AUTH per payment at the gateway, whichever face it went to (each payment
    # sends its own reference: orderreference, merchantTransactionId, bank_transaction_id); and no AUTH behind a failure.
    auths = json.load(urllib.request.urlopen(a.simulator.rstrip("/") + "/_sim/auths?all=1", timeout=30))
    counts = auths.get("counts", {})
    ours = collections.Counter()
    for reference, pid in sent_references(a.prefix).items():
        ours[pid] += counts.get(reference, 0)
    every = [p for ps in payments.values() for p in ps]
    double = {p["id"]: ours[p["id"]] for p in every if ours[p["id"]] > 1}
    authorized_without_auth = [p["id"] for p in every if p["status"] in ("authorized", "declined") and ours[p["id"]] == 0]
    charged_but_failed = [p["id"] for p in every if p["status"] == "failed" and ours[p["id"]] > 0]
    line("gateway AUTHs recorded (this run)", sum(ours.values()))
    attempts = dict(((t, st, o), int(c)) for t, st, o, c in psql(
        f"SELECT a.request_type, a.state, coalesce(a.outcome, ''), count(*) FROM gateway_attempts a JOIN payments p ON p.id = a.payment_id "
        f"WHERE left(p.job_id, {n}) = '{a.prefix}-' GROUP BY 1, 2, 3"))
    line("  lost answers settled by TRANSACTIONQUERY (found)", attempts.get(("TRANSACTIONQUERY", "completed", "found"), 0))
    line("  AUTHs refused before recording (503) and resent",
         sum(c for (t, st, o), c in attempts.items() if t != "TRANSACTIONQUERY" and st == "not_sent" and o == "transient"))
    line("double charges (payments with >1 AUTH)", len(double), True)
    line("authorized/declined without a gateway AUTH", len(authorized_without_auth), True)
    line("failed although the gateway recorded an AUTH", len(charged_but_failed), True)

    # 3. Webhooks: every terminal payment delivered at least once, one webhook-id across all its attempts.
    delivered = collections.Counter()
    ids = collections.defaultdict(set)
    failed_first = 0
    for raw in open(a.receiver_log, errors="replace"):
        if not raw.startswith("{"):
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        event, pid = entry.get("event"), entry.get("paymentId")
        # A payment's operations (capture, void, refund) have events of their own, with their own ids.
        if entry.get("type") in OPERATION_EVENTS:
            continue
        if event == "webhook_verified":
            delivered[pid] += 1
            ids[pid].add(entry.get("webhookId"))
        elif event == "webhook_failed_on_purpose":
            failed_first += 1
            ids[pid].add(entry.get("webhookId"))
    terminal_ids = [p["id"] for ps in payments.values() for p in ps if p["status"] in TERMINAL]
    missing = [pid for pid in terminal_ids if delivered[pid] == 0]
    id_mismatch = [pid for pid in terminal_ids if len(ids[pid]) > 1]
    db_ids = psql(f"SELECT count(*) FROM (SELECT w.payment_id FROM webhook_deliveries w JOIN payments p ON p.id = w.payment_id "
                  f"WHERE left(p.job_id, {n}) = '{a.prefix}-' AND w.event_type NOT IN ({', '.join(repr(t) for t in OPERATION_EVENTS)}) "
                  f"GROUP BY 1 HAVING count(DISTINCT w.event_id) > 1) x")[0][0]
    line("webhook attempts failed on purpose (first attempts)", failed_first)
    line("webhooks delivered (verified, incl. duplicates)", sum(delivered[pid] for pid in terminal_ids))
    line("terminal payments without a delivered webhook", len(missing), True)
    line("payments with more than one webhook-id", len(id_mismatch) + int(db_ids), True)
    results_missing = []
    if a.results:
        published = collections.Counter(m["payment_id"] for ms in json.load(open(a.results)).values() for m in ms)
        results_missing = [pid for pid in terminal_ids if published[pid] == 0]
        line("results events on paypipe.results (incl. duplicates)", sum(published[pid] for pid in terminal_ids))
        line("terminal payments without a results event", len(results_missing), True)
    invalid_unnotified = [job for job in invalid if not payments[job] or payments[job][0]["status"] != "failed"
                          or delivered[payments[job][0]["id"]] == 0]
    line(f"invalid jobs of the merchant not failed+notified (of {len(invalid)})", len(invalid_unnotified), True)

    # 4. Queues drained; dead-letter queues hold exactly the messages meant to be bad.
    non_empty = []
    for raw in open(a.queues):
        parts = raw.split()
        if len(parts) == 2 and parts[0].startswith("paypipe.") and not parts[0].endswith(".dlq") and parts[0] != a.trace_queue \
                and parts[1].isdigit() and int(parts[1]) > 0:
            non_empty.append(f"{parts[0]}={parts[1]}")
    line("work/retry queues not empty", len(non_empty), True)
    dlq = json.load(open(a.dlq))
    expected_dlq = {j["jobId"] for j in jobs if j["kind"] in DEAD_LETTERED}
    seen = collections.Counter()
    unexpected = []
    for queue, messages in dlq.items():
        for m in messages:
            if queue == "paypipe.decrypt.dlq" and m["message_id"] in expected_dlq:
                seen[m["message_id"]] += 1
            elif (m["message_id"] or "").startswith(a.prefix + "-") or queue != "paypipe.decrypt.dlq" or not m["message_id"]:
                unexpected.append(f"{queue}:{m['message_id']}:{m['code']}")
    line("dead letters of this run (expected)", sum(seen.values()))
    line("dead letters unexpected", len(unexpected), True)
    line("dead letters missing", len(expected_dlq - set(seen)), True)
    # At least once, like every hand-off: a worker killed after the broker confirmed the dead-letter copy but before
    # its ack gets the message again and dead-letters it again (same message_id; `paypipe dlq replay` is idempotent).
    line("  dead letters duplicated (at-least-once, informational)", sum(c - 1 for c in seen.values()))
    if a.faults:
        line("faults injected", a.faults)
    line("elapsed", f"{a.elapsed}s")

    width = max(len(r[0]) for r in rows_out)
    print("\n" + "=" * (width + 14))
    for label, value, zero in rows_out:
        mark = "" if not zero else ("  ok" if value == 0 else "  FAIL")
        print(f"{label:<{width}}  {value:>8}{mark}" if len(str(value)) <= 8 else f"{label:<{width}}  {value}")
    print("=" * (width + 14))
    details = [("lost", lost), ("duplicated", duplicated), ("stray", stray), ("status mismatch", mismatched),
               ("double charges", [f"{o}={c}" for o, c in double.items()]), ("authorized without AUTH", authorized_without_auth),
               ("charged but failed", charged_but_failed), ("webhook missing", missing), ("webhook-id mismatch", id_mismatch), ("results event missing", results_missing),
               ("invalid not notified", invalid_unnotified), ("young primes refused as expired", young), ("queues", non_empty), ("unexpected dead letters", unexpected)]
    for name, items in details:
        if items:
            print(f"{name}: {len(items)}: {', '.join(map(str, items[:10]))}{' …' if len(items) > 10 else ''}")
    failed = [label for label, value, zero in rows_out if zero and value != 0]
    print("chaos: " + ("PASS" if not failed else "FAIL (" + "; ".join(failed) + ")"))
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())

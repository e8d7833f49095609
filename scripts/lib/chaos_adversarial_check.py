#!/usr/bin/env python3
"""The assertions of `scripts/chaos adversarial`: the gateway's ledger against PayPipe's payments.

  chaos_adversarial_check.py --prefix P --jobs JOBS.jsonl --cards CARDS.jsonl --simulator URL --seed S --elapsed SECONDS
                             [--checked-elsewhere P2]   (the authorisations of P2's payments are chaos_recurring.py's)

Every authorisation the simulator processed on any face (`/_sim/auths?records=1`: reference, amount, currency, PAN
last four; the OPP and TapPay faces record theirs in the same ledger) is mapped to its payment by the reference PayPipe
recorded on the attempt that sent it (chaos_ledger.py), and checked against the job's own amount, currency and sandbox
PAN. Then: at most one AUTH per payment; a payment is authorised only if the gateway authorised it and declined only if
it declined it (an AUTH cancelled by a void, settlestatus 3, only for a payment PayPipe voided or whose void is for
review, its outcome unknown to PayPipe); a payment the gateway
charged never ends failed or declined; every payment terminal and notified. Exit 1 if any must-be-zero count is not 0.
"""
import argparse
import collections
import json
import sys
import urllib.request

from chaos_ledger import gateway_says, psql, sent_references
from sample_outcomes import connectors

TERMINAL = {"authorized", "declined", "failed", "needs_review"}
DEAD_LETTERED = {"unknownMerchant", "malformed"}




def main():
    parser = argparse.ArgumentParser()
    for name in ("--prefix", "--jobs", "--cards", "--simulator", "--seed", "--elapsed"):
        parser.add_argument(name, required=True)
    parser.add_argument("--checked-elsewhere", default="", help="a prefix whose payments another checker maps (chaos_recurring.py)")
    a = parser.parse_args()

    jobs = {j["jobId"]: j for j in (json.loads(line) for line in open(a.jobs) if line.strip())}
    cards = {c["jobId"]: c["pan"] for c in (json.loads(line) for line in open(a.cards) if line.strip())}
    n = len(a.prefix) + 1
    payments = {}
    connector_of = connectors()
    for job_id, pid, status, stage, order, amount, currency, lifecycle, merchant in psql(
            "SELECT job_id, id, status, stage, coalesce(order_reference, ''), coalesce(amount_minor::text, ''), coalesce(currency, ''), "
            f"coalesce(lifecycle, ''), merchant_id FROM payments WHERE left(job_id, {n}) = '{a.prefix}-'"):
        payments[pid] = {"job": job_id, "id": pid, "status": status, "stage": stage, "amount": amount, "currency": currency,
                         "lifecycle": lifecycle, "connector": connector_of.get(merchant, "trustpayments")}
    ledger = json.load(urllib.request.urlopen(a.simulator.rstrip("/") + "/_sim/auths?records=1", timeout=30)).get("records", [])

    sent = sent_references(a.prefix)
    elsewhere = sent_references(a.checked_elsewhere) if a.checked_elsewhere else {}
    auths = collections.defaultdict(list)
    unattributed, foreign = [], []
    for record in ledger:
        payment = payments.get(sent.get(record["orderreference"], ""))
        if payment is None and record["orderreference"] in elsewhere:
            continue
        if payment is None:
            unattributed.append(record["orderreference"])
            continue
        pan = cards.get(payment["job"], "")
        if str(record.get("baseamount")) != payment["amount"] or record.get("currencyiso3a") != payment["currency"] \
                or (pan and record.get("last4") != pan[-4:]):
            foreign.append(f"{record['orderreference']}: {record} vs {payment} (card …{pan[-4:]})")
        auths[payment["id"]].append(record)

    # A void (or a full refund before settlement, which is a void) whose answer was lost and that the status queries
    # could not settle is for review: the gateway may have cancelled the AUTH, PayPipe does not claim either way.
    void_for_review = {pid for (pid,) in psql(
        "SELECT DISTINCT o.payment_id FROM payment_operations o JOIN payments p ON p.id = o.payment_id "
        f"WHERE left(p.job_id, {n}) = '{a.prefix}-' AND o.state = 'needs_review' AND o.after_lifecycle = 'voided'")}

    double = {pid: len(rs) for pid, rs in auths.items() if len(rs) > 1}
    contradicting, review = [], []
    for pid, p in payments.items():
        said = gateway_says(auths.get(pid, []), p["lifecycle"] == "voided" or pid in void_for_review)
        if p["status"] == "authorized" and said != "authorized":
            contradicting.append(f"{p['job']}: authorized, gateway {said}")
        elif p["status"] == "declined" and said not in ("declined", "nothing"):
            contradicting.append(f"{p['job']}: declined, gateway {said}")
        elif p["status"] == "failed" and said != "nothing":
            contradicting.append(f"{p['job']}: failed, gateway {said}")
        elif p["status"] == "needs_review":
            review.append(p["job"])
    attributable = [j for j in jobs.values() if j["kind"] not in DEAD_LETTERED]
    by_job = {p["job"]: p for p in payments.values()}
    unresolved = [j["jobId"] for j in attributable
                  if by_job.get(j["jobId"], {}).get("status") not in TERMINAL or by_job[j["jobId"]]["stage"] != "done"]
    shared = psql(f"SELECT count(*) FROM (SELECT order_reference FROM payments WHERE left(job_id, {n}) = '{a.prefix}-' "
                  "AND order_reference IS NOT NULL GROUP BY 1 HAVING count(*) > 1) s")[0][0]
    attempts = dict(((t, st, o), int(c)) for t, st, o, c in psql(
        "SELECT a.request_type, a.state, coalesce(a.outcome, ''), count(*) FROM gateway_attempts a JOIN payments p ON p.id = a.payment_id "
        f"WHERE left(p.job_id, {n}) = '{a.prefix}-' GROUP BY 1, 2, 3"))
    late = psql("SELECT count(*) FROM gateway_attempts a JOIN payments p ON p.id = a.payment_id "
                f"WHERE left(p.job_id, {n}) = '{a.prefix}-' AND a.late_outcome IS NOT NULL")[0][0]
    statuses = collections.Counter(p["status"] for p in payments.values())
    per_connector = collections.defaultdict(collections.Counter)
    for p in payments.values():
        per_connector[p["connector"]][p["status"]] += 1
    for pid, records in auths.items():
        per_connector[payments[pid]["connector"]]["AUTHs"] += len(records)

    rows = [
        ("seed (CHAOS_SEED)", a.seed, False),
        ("jobs published", len(jobs), False),
        ("  attributable", len(attributable), False),
        ("  orders tried by more than one job", shared, False),
    ] + [(f"  payments {s}", c, False) for s, c in sorted(statuses.items())] + [
        (f"  {connector}", ", ".join(f"{s} {c}" for s, c in sorted(counts.items())), False) for connector, counts in sorted(per_connector.items())
    ] + [
        ("gateway AUTHs processed", len(ledger), False),
        ("  status queries: found / not found / stale",
         f"{sum(c for (t, _, o), c in attempts.items() if t == 'TRANSACTIONQUERY' and o == 'found')} / "
         f"{sum(c for (t, _, o), c in attempts.items() if t == 'TRANSACTIONQUERY' and o == 'not_found')} / "
         f"{sum(c for (t, _, o), c in attempts.items() if t == 'TRANSACTIONQUERY' and o.startswith('stale_'))}", False),
        ("  AUTH attempts certainly not sent (send window, busy, refused)", sum(c for (t, _, o), c in attempts.items() if t != 'TRANSACTIONQUERY' and o == 'transient'), False),
        ("  late answers kept as evidence", late, False),
        ("  needs_review (for an operator)", len(review), False),
        ("double AUTHs (payments with >1 processed AUTH)", len(double), True),
        ("outcomes contradicting the gateway's ledger", len(contradicting), True),
        ("AUTHs not matching their payment (amount, currency, card)", len(foreign), True),
        ("AUTHs of no payment of this run", len(unattributed), True),
        ("unresolved payments (not terminal and notified)", len(unresolved), True),
    ]
    width = max(len(label) for label, _, _ in rows)
    failed = False
    for label, value, zero in rows:
        bad = zero and value not in (0, "0")
        failed |= bad
        print(f"   {label.ljust(width)}  {value}{'   <-- must be 0' if bad else ''}")
    print(f"   elapsed {a.elapsed}s")
    for title, items in (("double", list(double.items())), ("contradicting", contradicting), ("foreign", foreign),
                         ("unattributed", unattributed), ("unresolved", unresolved)):
        for item in items[:10]:
            print(f"   {title}: {item}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

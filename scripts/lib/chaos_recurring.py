#!/usr/bin/env python3
"""Stored credentials and deferred payments in a chaos run (docs/chaos.md): customer-initiated payments that
store a credential (CITs) on Trust Payments and OPP, merchant-initiated payments (MITs) charging the credentials those
CITs stored, and TapPay deferred payments (`amountPending`) completed by `payment.complete.requested` operations, all
under the run's faults. Used by `scripts/chaos [short|full]` and `scripts/chaos adversarial [short|full]`. The jobs'
ids start with `PREFIX-` (the caller gives a prefix of its own, so the run's sample-job checks never see them).

  chaos_recurring.py publish PREFIX RUN_DIR PAYPIPE PKI_DIR CITS DEFERRED [SECRETS.jsonl]
      CITS storing jobs per connector (every fifth declined by its amount, so no MIT may follow it) and DEFERRED TapPay
      deferred payments; their PANs and cryptograms appended to SECRETS (the hygiene check's). Exits non-zero if the
      broker refused the publish (the caller retries; the minted jobs are kept in RUN_DIR until published).
  chaos_recurring.py follow AMQP_URL PREFIX RUN_DIR PAYPIPE
      what follows from the payments' state, each once (RUN_DIR/recurring.follow.jsonl records what was published):
      two MITs per CIT once it is authorised with its credential active, none for a CIT that ended otherwise; one
      completion per deferred payment once it waits in awaiting_amount, a third of them published twice at once with
      the same operationId and a third again once the payment is authorised. Exit 0 once everything is followed, 3
      while something is still to come (the caller calls again), 1 if the broker refused.
  chaos_recurring.py check SIMULATOR_URL PREFIX RUN_DIR TIMEOUT [DLQ.json]
      waits (up to TIMEOUT s) for every payment of the prefix to be terminal and notified, then asserts against the
      simulator's ledger (GET /_sim/auths?records=1, every face's authorisations: Trust Payments' AUTH, OPP's PA/DB,
      TapPay's Pay by Prime): at most one per payment; no outcome contradicting it; each authorisation for the payment's
      own amount (a completion's amount for a deferred payment); every CIT authorised with an active credential (none
      for a declined one); every MIT of an active credential authorised, terminal and notified; every completion
      applied exactly once (one awaiting_amount → decrypted change, the completion's amount, authorised). Prints a
      table with the counts; exit 1 if a must-be-zero count is not zero.
"""
import base64
import collections
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request

from chaos_ledger import gateway_says, psql, sent_references

STORING = {"sandbox-merchant": "tp", "sandbox-merchant-opp": "opp"}   # the connectors that store credentials
TAPPAY = "sandbox-merchant-tappay"
TERMINAL = {"authorized", "declined", "failed", "needs_review"}
DEFERRED_MAXIMUM = 500000   # TWD 5,000 in minor units: the most a completion may charge
MITS_PER_CIT = 2


def jsonl(path):
    return [json.loads(line) for line in open(path) if line.strip()] if os.path.exists(path) else []


def append(path, entries):
    with open(path, "a") as out:
        for entry in entries:
            out.write(json.dumps(entry) + "\n")


def publish_jobs(paypipe, run_dir, jobs, name):
    """`paypipe job publish` of a JSON array, through a 0600 file in the run's directory removed once published (the
    CITs' Apple Pay tokens and the deferred primes are secrets). False if the broker refused: the file stays."""
    path = os.path.join(run_dir, name)
    if jobs:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(jobs, out)
    if not os.path.exists(path):
        return True
    if subprocess.run([paypipe, "job", "publish", path], capture_output=True).returncode != 0:
        return False
    os.remove(path)
    return True


def publish(prefix, run_dir, paypipe, pki_dir, cits, deferred, secrets_path=None):
    plan_path = os.path.join(run_dir, "recurring.jsonl")
    if not os.path.exists(plan_path):   # mint once; a retry after a refused publish only publishes
        plan, jobs, cards = [], [], []
        for merchant, slug in STORING.items():
            for i in range(int(cits)):
                job_id = f"{prefix}-cit-{slug}-{i}"
                declined = i % 5 == 4   # the simulator declines an amount ending in 51: no credential, no MIT
                amount = 1000 + 100 * i + (51 if declined else 10)
                pan, cryptogram = f"400005665{secrets.randbelow(10 ** 7):07d}", base64.b64encode(os.urandom(20)).decode()
                token = os.path.join(run_dir, f"{job_id}.token")
                subprocess.run([paypipe, "token", "mint", "--pki-dir", pki_dir, "--merchant-id", merchant, "--amount", str(amount),
                                "--currency", "826", "--pan", pan, "--cryptogram", cryptogram, "--out", token], check=True, capture_output=True)
                jobs.append({"jobId": job_id, "merchantId": merchant, "orderReference": job_id, "amount": {"value": amount, "currency": "GBP"},
                             "applePayToken": json.load(open(token)), "storeCredential": {"usage": "recurring"}})
                os.remove(token)
                cards.append({"jobId": job_id, "pan": pan, "cryptogram": cryptogram})
                plan.append({"kind": "cit", "jobId": job_id, "merchantId": merchant, "amount": amount, "declined": declined})
        for i in range(int(deferred)):
            job_id = f"{prefix}-def-{i}"
            prime = "sim_deferred_%d_%s" % (int(time.time() * 1000), os.urandom(12).hex())   # the simulator's 30-day prime
            jobs.append({"jobId": job_id, "merchantId": TAPPAY, "orderReference": job_id, "amount": {"value": DEFERRED_MAXIMUM, "currency": "TWD"},
                         "tapPayPrime": prime, "amountPending": True})
            plan.append({"kind": "deferred", "jobId": job_id, "merchantId": TAPPAY, "amount": 100000 + 100 * i})
        if secrets_path:
            append(secrets_path, cards)
        if not publish_jobs(paypipe, run_dir, jobs, "recurring.jobs.json"):
            append(plan_path, plan)
            return 1
        append(plan_path, plan)
    elif not publish_jobs(paypipe, run_dir, [], "recurring.jobs.json"):
        return 1
    plan = jsonl(plan_path)
    print(json.dumps({"cits": sum(p["kind"] == "cit" for p in plan), "deferred": sum(p["kind"] == "deferred" for p in plan)}))
    return 0


def payments_of(prefix):
    """{job id: {id, status, stage, amount, merchant, credential, credentialState}} for the prefix's payments."""
    n = len(prefix) + 1
    out = {}
    for job, pid, status, stage, amount, merchant, credential, state in psql(
            "SELECT p.job_id, p.id, p.status, p.stage, coalesce(p.amount_minor::text, ''), p.merchant_id, coalesce(c.id, ''), coalesce(c.state, '') "
            "FROM payments p LEFT JOIN credentials c ON c.payment_id = p.id "
            f"WHERE left(p.job_id, {n}) = '{prefix}-'"):
        out[job] = {"id": pid, "status": status, "stage": stage, "amount": amount, "merchant": merchant,
                    "credential": credential, "credentialState": state}
    return out


def follow(amqp_url, prefix, run_dir, paypipe):
    import pika
    plan = jsonl(os.path.join(run_dir, "recurring.jsonl"))
    follow_path = os.path.join(run_dir, "recurring.follow.jsonl")
    done = collections.defaultdict(set)   # kind → the plan's job ids it was done for
    for entry in jsonl(follow_path):
        done[entry["kind"]].add(entry["for"])
    payments = payments_of(prefix)
    mits, followed, completions = [], [], []
    pending = 0
    for i, p in enumerate(plan):
        payment = payments.get(p["jobId"])
        terminal = payment is not None and payment["status"] in TERMINAL and payment["stage"] == "done"
        if p["kind"] == "cit" and p["jobId"] not in done["mit"] | done["nomit"]:
            if payment and payment["status"] == "authorized" and payment["credentialState"] == "active":
                for k in range(1, MITS_PER_CIT + 1):
                    job_id = f"{p['jobId'].replace('-cit-', '-mit-')}-{k}"
                    mits.append({"jobId": job_id, "merchantId": p["merchantId"], "orderReference": job_id,
                                 "amount": {"value": 500 + 100 * k + 20, "currency": "GBP"}, "initiator": "merchant",
                                 "credentialId": payment["credential"], "mitReason": "recurring"})
                followed.append({"kind": "mit", "for": p["jobId"], "credential": payment["credential"]})
            elif terminal:
                followed.append({"kind": "nomit", "for": p["jobId"], "status": payment["status"]})
            else:
                pending += 1
        elif p["kind"] == "deferred":
            copies = 2 if i % 3 == 0 else 1
            operation = {"operationId": f"{p['jobId']}-complete", "merchantId": p["merchantId"], "amount": p["amount"]}
            if p["jobId"] not in done["completion"] | done["nocompletion"]:
                if payment and payment["status"] == "awaiting_amount":
                    completions += [dict(operation, paymentId=payment["id"])] * copies
                    followed.append({"kind": "completion", "for": p["jobId"], "operationId": operation["operationId"],
                                     "paymentId": payment["id"], "amount": p["amount"], "copies": copies})
                    pending += i % 3 == 1   # its repeat comes once the payment is authorised
                elif terminal:
                    followed.append({"kind": "nocompletion", "for": p["jobId"], "status": payment["status"]})
                else:
                    pending += 1
            elif i % 3 == 1 and p["jobId"] in done["completion"] and p["jobId"] not in done["repeat"]:
                # The same completion again once the payment is authorised: it must change nothing.
                if terminal:
                    completions.append(dict(operation, paymentId=payment["id"]))
                    followed.append({"kind": "repeat", "for": p["jobId"], "operationId": operation["operationId"]})
                else:
                    pending += 1
    if mits and not publish_jobs(paypipe, run_dir, mits, "recurring.mits.json"):
        return 1
    if completions:
        try:
            connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
            channel = connection.channel()
            channel.confirm_delivery()
            for body in completions:
                channel.basic_publish("paypipe.jobs", "payment.complete.requested", json.dumps(body).encode(), pika.BasicProperties(
                    delivery_mode=2, content_type="application/json", message_id=body["operationId"]), mandatory=True)
            connection.close()
        except Exception as error:   # the broker is down or restarting: the caller calls again
            print(f"completions not published: {error}", file=sys.stderr)
            followed = [f for f in followed if f["kind"] not in ("completion", "repeat")]
            append(follow_path, followed)
            return 1
    append(follow_path, followed)
    print(json.dumps({"mitsPublished": len(mits), "completionsPublished": len(completions), "pending": pending}))
    return 3 if pending or not plan else 0


def check(simulator_url, prefix, run_dir, timeout, dlq_path=None):
    plan = {p["jobId"]: p for p in jsonl(os.path.join(run_dir, "recurring.jsonl"))}
    followed = jsonl(os.path.join(run_dir, "recurring.follow.jsonl"))
    mit_jobs = {f"{c['for'].replace('-cit-', '-mit-')}-{k}": c for c in followed if c["kind"] == "mit" for k in range(1, MITS_PER_CIT + 1)}
    completion = {c["for"]: c for c in followed if c["kind"] == "completion"}
    expected = set(plan) | set(mit_jobs)
    deadline = time.time() + timeout
    while True:
        payments = payments_of(prefix)
        unresolved = sorted(j for j in expected if payments.get(j, {}).get("status") not in TERMINAL or payments[j]["stage"] != "done")
        if not unresolved or time.time() > deadline:
            break
        time.sleep(1)
    notified = {pid for (pid,) in psql(
        f"SELECT DISTINCT p.id FROM payments p JOIN webhook_deliveries w ON w.payment_id = p.id WHERE left(p.job_id, {len(prefix) + 1}) = '{prefix}-' "
        "AND w.outcome = 'delivered' AND w.event_type = 'payment.' || p.status")}
    by_id = {p["id"]: dict(p, job=job) for job, p in payments.items()}
    ledger = json.load(urllib.request.urlopen(simulator_url.rstrip("/") + "/_sim/auths?records=1", timeout=30)).get("records", [])
    sent = sent_references(prefix)
    auths = collections.defaultdict(list)
    for record in ledger:
        if sent.get(record["orderreference"]) in by_id:
            auths[sent[record["orderreference"]]].append(record)
    changes = collections.Counter(pid for (pid,) in psql(
        f"SELECT e.payment_id FROM payment_events e JOIN payments p ON p.id = e.payment_id WHERE left(p.job_id, {len(prefix) + 1}) = '{prefix}-' "
        "AND e.from_status = 'awaiting_amount' AND e.to_status = 'decrypted'"))

    double = [f"{by_id[pid]['job']}={len(rs)}" for pid, rs in auths.items() if len(rs) > 1]
    contradicting, foreign = [], []
    for pid, p in by_id.items():
        said = gateway_says(auths.get(pid, []), False)
        if (p["status"] == "authorized" and said != "authorized") or (p["status"] == "declined" and said not in ("declined", "nothing")) \
                or (p["status"] == "failed" and said != "nothing"):
            contradicting.append(f"{p['job']}: {p['status']}, gateway {said}")
        foreign += [f"{p['job']}: gateway {r.get('baseamount')}, PayPipe {p['amount']}" for r in auths.get(pid, [])
                    if str(r.get("baseamount")) != p["amount"]]
    cits = [p for p in plan.values() if p["kind"] == "cit"]
    stored = [c for c in cits if payments.get(c["jobId"], {}).get("credentialState") == "active"]
    cit_wrong = [f"{c['jobId']}: {payments.get(c['jobId'], {}).get('status')}, credential {payments.get(c['jobId'], {}).get('credentialState') or 'none'}"
                 for c in cits if (payments.get(c["jobId"], {}).get("status") == "authorized") != bool(payments.get(c["jobId"], {}).get("credentialState"))
                 or (c["declined"] and payments.get(c["jobId"], {}).get("status") == "authorized")]
    mit_of_inactive = [c["for"] for c in followed if c["kind"] == "mit" and c["for"] not in {s["jobId"] for s in stored}]
    mits = {j: payments.get(j, {}) for j in mit_jobs}
    mit_unfinished = [j for j, p in mits.items() if p.get("status") not in TERMINAL or p.get("stage") != "done" or p.get("id") not in notified]
    mit_not_authorised = [f"{j}: {p.get('status')}" for j, p in mits.items() if p.get("status") in TERMINAL and p.get("status") != "authorized"]
    deferred = [p for p in plan.values() if p["kind"] == "deferred"]
    not_once = []
    for d in deferred:
        p = payments.get(d["jobId"], {})
        c = completion.get(d["jobId"])
        if c is None:
            not_once.append(f"{d['jobId']}: never waited for its amount ({p.get('status')})")
        elif p.get("status") != "authorized" or p.get("amount") != str(c["amount"]) or changes[p.get("id")] != 1 or len(auths.get(p.get("id"), [])) != 1 \
                or p.get("id") not in notified:
            not_once.append(f"{d['jobId']}: {p.get('status')} {p.get('amount')} (completion {c['amount']}), {changes[p.get('id')]} completions applied, "
                            f"{len(auths.get(p.get('id'), []))} Pay by Prime, notified {p.get('id') in notified}")
    dead = []
    if dlq_path and os.path.exists(dlq_path):
        # A job's own message (its job id) or a stage's hand-off of one of its payments (`<payment id>:<stage>`).
        dead = [f"{q}:{m['message_id']}" for q, ms in json.load(open(dlq_path)).items() for m in ms
                if (m.get("message_id") or "").startswith(prefix + "-") or (m.get("message_id") or "").split(":")[0] in by_id]
    statuses = lambda jobs: ", ".join(f"{s} {n}" for s, n in sorted(collections.Counter(payments.get(j, {}).get("status", "none") for j in jobs).items()))
    rows = [
        ("CITs published (Trust Payments + OPP)", len(cits), False),
        ("  CITs: " + statuses(c["jobId"] for c in cits), "", False),
        ("  credentials stored (active)", len(stored), False),
        ("  declined by their amount (no credential, no MIT)", sum(c["declined"] for c in cits), False),
        ("MITs published", len(mit_jobs), False),
        ("  MITs: " + statuses(mit_jobs), "", False),
        ("  MITs authorised", sum(p.get("status") == "authorized" for p in mits.values()), False),
        ("deferred payments published (TapPay)", len(deferred), False),
        ("  completions (distinct / messages incl. repeats)",
         f"{len(completion)} / {sum(c['copies'] for c in completion.values()) + sum(f['kind'] == 'repeat' for f in followed)}", False),
        ("  completions applied", sum(1 for d in deferred if changes[payments.get(d['jobId'], {}).get('id')] >= 1), False),
        ("gateway authorisations of these payments", sum(len(rs) for rs in auths.values()), False),
        ("double charges (payments with >1 AUTH / Pay by Prime)", len(double), True),
        ("outcomes contradicting the gateway's ledger", len(contradicting), True),
        ("authorisations not for the payment's amount", len(foreign), True),
        ("CITs authorised without an active credential (or with one, not authorised)", len(cit_wrong), True),
        ("MITs of a CIT without an active credential", len(mit_of_inactive), True),
        ("MITs not terminal and notified", len(mit_unfinished), True),
        ("MITs of an active credential not authorised", len(mit_not_authorised), True),
        ("completions not applied exactly once", len(not_once), True),
        ("payments not terminal and notified", len(unresolved), True),
        ("dead letters of these jobs", len(dead), True),
    ]
    width = max(len(label) for label, _, _ in rows)
    failed = [label for label, value, zero in rows if zero and value != 0]
    for label, value, zero in rows:
        print(f"   {label.ljust(width)}  {value}{('   ok' if value == 0 else '   <-- must be 0') if zero else ''}")
    for title, items in (("double", double), ("contradicting", contradicting), ("foreign", foreign), ("CIT", cit_wrong),
                         ("MIT of inactive", mit_of_inactive), ("MIT unfinished", mit_unfinished), ("MIT not authorised", mit_not_authorised),
                         ("completion", not_once), ("unresolved", unresolved), ("dead letter", dead)):
        for item in items[:10]:
            print(f"   {title}: {item}", file=sys.stderr)
    print("recurring: " + ("PASS" if not failed else "FAIL (" + "; ".join(failed) + ")"))
    return 1 if failed else 0


if __name__ == "__main__":
    command, arguments = (sys.argv[1] if len(sys.argv) > 1 else ""), sys.argv[2:]
    if command == "publish":
        sys.exit(publish(*arguments))
    elif command == "follow":
        sys.exit(follow(*arguments))
    elif command == "check":
        sys.exit(check(arguments[0], arguments[1], arguments[2], float(arguments[3]), *arguments[4:]))
    sys.exit(f"usage: {sys.argv[0]} publish|follow|check …")

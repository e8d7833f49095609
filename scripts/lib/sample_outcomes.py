#!/usr/bin/env python3
"""Where each sample job must end, per connector: the oracle of scripts/demo and the chaos checks.

`paypipe job publish --sample` prints one JSON line per job with its `kind`; the merchant's connector (read from the
`merchants` table: `config.gateway.type`) decides the gateway's own codes (a Trust Payments decline is 70000, OPP's
800.100.151, TapPay's a Record API record_status -1).

  sample_outcomes.py check --prefix P --jobs JOBS.jsonl     every attributable job of the run ended as its kind says
                                                           (one table per connector; exit 1 on any mismatch)
"""
import argparse
import collections
import json
import sys

from chaos_ledger import psql

DEAD_LETTERED = {"unknownMerchant", "malformed"}
TERMINAL = {"authorized", "declined", "failed", "needs_review"}
DECLINE_CODE = {"trustpayments": "gateway_70000", "opp": "gateway_800.100.151", "tappay": "gateway_record_status_-1"}
# kind → (status, error code) the payment must end with; "declined" takes the connector's code.
EXPECTED = {
    "valid": ("authorized", None), "validRSA": ("authorized", None), "declined": ("declined", None),
    "amountMismatch": ("failed", "amount_mismatch"), "invalidJob": ("failed", "invalid_job"),
    "replayedToken": ("failed", "token_replayed"), "amountNotRepresentable": ("failed", "amount_not_representable"),
}
# A TapPay prime lives 90 s from its publish time: a job queued longer fails prime_expired without any AUTH (the
# chaos checks assert that no AUTH stands behind a failed payment, and young_expiries that the prime really was old).
# Counted apart, not a mismatch, for the kinds that reach the gateway.
PRIME_EXPIRED = ("failed", "prime_expired")
REACH_THE_GATEWAY = {"valid", "declined"}
# The youngest age at which a refusal for an expired prime is believable: 90 s minus the call timeout (2-3 s in these
# runs) minus the clock's slop between the publisher and the workers.
OLDEST_FRESH_PRIME = 85


def connectors():
    """{merchant id: connector} for every applied merchant (`gateway.type` as ConnectorKind spells it)."""
    names = {"securetrading": "trustpayments", "aci": "opp", "oppwa": "opp", "acioppwa": "opp"}
    out = {}
    for merchant, kind in psql("SELECT id, coalesce(config->'gateway'->>'type', '') FROM merchants"):
        kind = kind.lower().replace("-", "").replace("_", "")
        out[merchant] = names.get(kind, kind if kind in DECLINE_CODE else "trustpayments")
    return out


def expected(kind, connector):
    status, code = EXPECTED[kind]
    if kind == "declined":
        code = DECLINE_CODE[connector]
    return status, code


def judge(kind, connector, status, code):
    """'ok', 'expired' (a TapPay prime that outlived its queueing: allowed) or 'mismatch'."""
    got = (status, code if status != "authorized" else None)
    if got == expected(kind, connector):
        return "ok"
    if connector == "tappay" and kind in REACH_THE_GATEWAY and got == PRIME_EXPIRED:
        return "expired"
    return "mismatch"


REPLAYED = ("failed", "token_replayed")


def replay_partner(job_id, kind, kinds):
    """The other job of a replay pair (a `valid` job and the `replayedToken` job that re-sends its token or prime:
    SampleJobFactory puts the original at index 5 of every ten and its replay at 9), or None."""
    base, _, index = job_id.rpartition("-")
    if kind not in ("valid", "replayedToken") or not index.isdigit():
        return None
    partner = f"{base}-{int(index) + 4 if kind == 'valid' else int(index) - 4}"
    return partner if {kind, kinds.get(partner)} == {"valid", "replayedToken"} else None


def replay_race_won_by_partner(connector, got, partner_got):
    """A replayed token races its original when the two are decided in different batches (decrypt runs several at
    once, and several workers): whichever commits first claims the token's transactionId, so a pair (see
    replay_partner) is right when exactly one of the two failed token_replayed and the other went on as a valid job
    would (authorised; or, at TapPay, its prime expired while queued). `got` and `partner_got` are (status, code or
    None); `partner_got` None when the partner has no single terminal payment."""
    if partner_got is None:
        return False
    replayed = [o for o in (got, partner_got) if o == REPLAYED]
    winner = [o for o in (got, partner_got) if o != REPLAYED]
    return len(replayed) == 1 and len(winner) == 1 and judge("valid", connector, *winner[0]) != "mismatch"


def young_expiries(prefix, jobs):
    """Payments of the run failed prime_expired although their prime was younger than OLDEST_FRESH_PRIME seconds at
    their last pay-by-prime attempt (its age counted from the job's publish time): must be none."""
    published = {j["jobId"]: j["publishedAtMs"] / 1000 for j in jobs if "publishedAtMs" in j}
    n = len(prefix) + 1
    rows = psql("SELECT p.job_id, extract(epoch FROM max(a.started_at)) FROM payments p JOIN gateway_attempts a ON a.payment_id = p.id "
                f"WHERE p.error_code = 'prime_expired' AND a.request_type <> 'TRANSACTIONQUERY' AND left(p.job_id, {n}) = '{prefix}-' GROUP BY 1")
    ages = {job: float(at) - published[job] for job, at in rows if job in published}
    return [f"{job}: {age:.1f} s" for job, age in sorted(ages.items()) if age < OLDEST_FRESH_PRIME]


def check(prefix, jobs_path):
    jobs = [json.loads(line) for line in open(jobs_path) if line.strip()]
    n = len(prefix) + 1
    rows = {job: (merchant, status, stage, code) for job, merchant, status, stage, code in psql(
        "SELECT job_id, merchant_id, status, stage, coalesce(error_code, '') FROM payments "
        f"WHERE left(job_id, {n}) = '{prefix}-'")}
    of = connectors()
    kinds = {job["jobId"]: job["kind"] for job in jobs}

    def outcome(job_id):
        row = rows.get(job_id)
        return None if row is None or row[1] not in TERMINAL else (row[1], row[3] if row[1] != "authorized" and row[3] else None)

    table = collections.defaultdict(collections.Counter)
    problems = []
    for job in jobs:
        if job["kind"] in DEAD_LETTERED:
            continue
        row = rows.get(job["jobId"])
        if row is None or row[1] not in TERMINAL or row[2] != "done":
            problems.append(f"{job['jobId']} ({job['kind']}): {'no payment' if row is None else f'{row[1]}/{row[2]}'}")
            table["?" if row is None else of.get(row[0], "?")]["unfinished"] += 1
            continue
        connector = of.get(row[0], "trustpayments")
        verdict = judge(job["kind"], connector, row[1], row[3] or None)
        partner = replay_partner(job["jobId"], job["kind"], kinds)
        if verdict == "mismatch" and partner and replay_race_won_by_partner(connector, outcome(job["jobId"]), outcome(partner)):
            verdict = "ok"
        table[connector][verdict] += 1
        table[connector][f"{row[1]}"] += 1
        if verdict == "mismatch":
            problems.append(f"{job['jobId']} ({job['kind']}, {connector}): {row[1]} {row[3]}, expected {expected(job['kind'], connector)}")
    for connector in sorted(table):
        counts = table[connector]
        statuses = ", ".join(f"{s} {counts[s]}" for s in sorted(TERMINAL) if counts[s])
        print(f"   {connector:<14} {counts['ok']:>4} as expected, {counts['mismatch']:>2} not, {counts['unfinished']:>2} unfinished,"
              f" {counts['expired']:>2} primes expired in the queue ({statuses})")
    young = young_expiries(prefix, jobs)
    if young:
        print(f"   primes refused as expired although younger than {OLDEST_FRESH_PRIME} s: {len(young)}")
        problems += young
    for problem in problems[:20]:
        print(f"   {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["check"])
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--jobs", required=True)
    a = parser.parse_args()
    sys.exit(check(a.prefix, a.jobs))

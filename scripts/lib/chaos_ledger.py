"""What the chaos checkers share: PayPipe's database, and the gateway references PayPipe actually sent.

The simulator's ledger names each processed authorisation by the reference it carried: Trust Payments' `orderreference`,
OPP's `merchantTransactionId`, TapPay's `bank_transaction_id` (the faces record theirs in the same ledger). The checkers
map it back to a payment through `gateway_attempts.order_reference`, which the submit stage commits before any
authorisation leaves: so the map needs no copy of the reference's form (GatewayOrderReference), and an authorisation
whose reference no attempt recorded is reported as belonging to no payment.
"""
import os
import subprocess


def psql(sql):
    out = subprocess.run(["psql", os.environ["PAYPIPE_DATABASE_URL"], "-AtqF", "\t", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def sent_references(prefix):
    """{reference sent: payment id} for every authorisation attempt (Trust Payments' AUTH, OPP's PA/DB, TapPay's
    pay-by-prime: every request type but the status query) of the jobs whose id starts with `prefix-`."""
    n = len(prefix) + 1
    return {ref: pid for ref, pid in psql(
        "SELECT DISTINCT a.order_reference, p.id FROM gateway_attempts a JOIN payments p ON p.id = a.payment_id "
        f"WHERE a.request_type <> 'TRANSACTIONQUERY' AND left(p.job_id, {n}) = '{prefix}-'")}


def gateway_says(records, voided):
    """What the simulator's ledger records (`/_sim/auths?records=1`, a payment's) say of the payment: "nothing",
    "authorized", "declined", or what else it holds. `voided`: PayPipe voided it (or its void is for review), so an
    AUTH cancelled afterwards (settlestatus 3) still counts as authorised."""
    if not records:
        return "nothing"
    r = records[0]
    if r.get("errorcode") == "0":
        # A void (an operation, or a refund before settlement) cancels the AUTH: settlestatus 3 afterwards.
        authorised = ("0", "1", "10", "100", None) + (("3",) if voided else ())
        return "authorized" if r.get("settlestatus") in authorised else f"settlestatus {r.get('settlestatus')}"
    return "declined" if r.get("errorcode") == "70000" else f"errorcode {r.get('errorcode')}"

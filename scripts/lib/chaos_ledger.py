"""What the chaos checkers share: PayPipe's database, and the gateway references PayPipe actually sent.

The simulator's ledger names each processed AUTH by the `orderreference` it carried. The checkers map it back to a
payment through `gateway_attempts.order_reference`, which the submit stage commits before any AUTH leaves: so the
map needs no copy of the reference's form (GatewayOrderReference), and an AUTH whose reference no attempt recorded
is reported as belonging to no payment.
"""
import os
import subprocess


def psql(sql):
    out = subprocess.run(["psql", os.environ["PAYPIPE_DATABASE_URL"], "-AtqF", "\t", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def sent_references(prefix):
    """{orderreference sent: payment id} for every AUTH attempt of the jobs whose id starts with `prefix-`."""
    n = len(prefix) + 1
    return {ref: pid for ref, pid in psql(
        "SELECT DISTINCT a.order_reference, p.id FROM gateway_attempts a JOIN payments p ON p.id = a.payment_id "
        f"WHERE a.request_type = 'AUTH' AND left(p.job_id, {n}) = '{prefix}-'")}

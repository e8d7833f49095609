#!/usr/bin/env python3
"""Trust Payments' own Python SDK (PyPI `securetrading`) against paypipe-gateway-sim over /json/.

Drives, with the SDK's Api (which rejects any answer whose requestreference is not the one it sent, error 9):
AUTH with pan/tavv/eci (the fields given in --auth-json), AUTH with a wallet token, TRANSACTIONQUERY by site and
order reference and by transaction reference alone, TRANSACTIONUPDATE (settlebaseamount) and REFUND of a settled
AUTH (the simulator runs with a settlement delay; the script polls TRANSACTIONQUERY until the parent reads
settlestatus 100). Every step must answer errorcode 0. Prints a JSON summary; exits non-zero on any failure, and
with 2 when the SDK is missing (scripts/bootstrap installs it): the contract test fails rather than skips.

Usage: trustpayments_sdk_contract.py --url http://127.0.0.1:PORT --user ws --password pw --auth-json FILE --order REF
"""
import json
import time

from contract_support import require, simulator_arguments

securetrading = require("securetrading", "pip install securetrading")


def main():
    parser = simulator_arguments("Trust Payments' Python SDK against the simulator's /json/")
    parser.add_argument("--site", default="test_site1")
    parser.add_argument("--auth-json", required=True, help="the AUTH request fields PayPipe sent (its claims' payload)")
    parser.add_argument("--order", required=True, help="the order reference of that AUTH")
    args = parser.parse_args()

    config = securetrading.Config()
    config.username = args.user
    config.password = args.password
    config.datacenterurl = args.url
    # As PayPipe sends it, so the two encodings can be compared.
    config.acceptcustomeroutput = "2.00"
    api = securetrading.Api(config)
    summary = {"sdk": securetrading.__version__, "steps": {}}

    def process(step, fields):
        request = securetrading.Request()
        request.update(fields)
        response = api.process(request)
        items = response["responses"]
        codes = [item.get("errorcode") for item in items]
        summary["steps"][step] = {"errorcodes": codes, "requestreference": response.get("requestreference")}
        if any(code != "0" for code in codes):
            raise SystemExit(f"{step}: the SDK reports {items}")
        return items

    with open(args.auth_json) as handle:
        auth_fields = json.load(handle)
    auth = process("auth_pan_tavv_eci", auth_fields)[-1]
    wallet = process("auth_wallettoken", {
        "requesttypedescriptions": ["AUTH"], "sitereference": args.site, "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP", "baseamount": "2000", "orderreference": args.order + "-W", "walletsource": "APPLEPAY",
        "wallettoken": json.dumps({"paymentData": {"version": "EC_v1", "data": "c2RrLWNvbnRyYWN0"}}),
    })[-1]
    by_order = process("query_by_order", {
        "requesttypedescriptions": ["TRANSACTIONQUERY"],
        "filter": {"sitereference": [{"value": args.site}], "orderreference": [{"value": args.order}]},
    })[0]
    if auth["transactionreference"] not in [record.get("transactionreference") for record in by_order.get("records", [])]:
        raise SystemExit(f"query_by_order: the AUTH {auth['transactionreference']} is not among {by_order.get('records')}")
    by_reference = process("query_by_transactionreference", {
        "requesttypedescriptions": ["TRANSACTIONQUERY"],
        "filter": {"transactionreference": [{"value": wallet["transactionreference"]}]},
    })[0]
    records = by_reference.get("records", [])
    if [record.get("transactionreference") for record in records] != [wallet["transactionreference"]]:
        raise SystemExit(f"query_by_transactionreference: expected exactly {wallet['transactionreference']}, got {records}")
    process("transactionupdate", {
        "requesttypedescriptions": ["TRANSACTIONUPDATE"],
        "filter": {"sitereference": [{"value": args.site}], "transactionreference": [{"value": auth["transactionreference"]}]},
        "updates": {"settlebaseamount": "500"},
    })
    # A REFUND needs a settled parent: wait (bounded) until the simulator's settlement delay has passed.
    deadline = time.monotonic() + 15
    while True:
        record = process("query_settlement", {
            "requesttypedescriptions": ["TRANSACTIONQUERY"],
            "filter": {"transactionreference": [{"value": wallet["transactionreference"]}]},
        })[0]["records"][0]
        if record.get("settlestatus") == "100":
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"the wallet AUTH never settled: {record}")
        time.sleep(0.2)
    refund = process("refund", {
        "requesttypedescription": "REFUND", "sitereference": args.site,
        "parenttransactionreference": wallet["transactionreference"], "baseamount": "700",
    })[0]
    summary["refund"] = {"transactionreference": refund.get("transactionreference"), "baseamount": refund.get("baseamount")}
    summary["ok"] = True
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

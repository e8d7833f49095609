#!/usr/bin/env python3
"""PAY.ON's own Python wrapper for the Open Payment Platform (PyPI `opp` 1.3.1) against paypipe-gateway-sim's OPP face.

The wrapper authenticates the legacy way, with `authentication.userId`, `authentication.password` and
`authentication.entityId` body parameters, adds `customParameters[SHOPPER_pluginId]=Python` and (in its default
TEST_INTERNAL mode) `testMode=INTERNAL`, and form-encodes every POST. With it this script sends: the pre-authorisation
PayPipe sent (the form fields given in --form-json, under its own merchantTransactionId), a capture and a partial refund
of it by the capture's id (the wrapper's Captures and Refunds), a GET of the payment, a reversal of a second pre-authorisation (Reversals),
a declined debit, a `/v3/query` by merchantTransactionId through the wrapper's own HTTP client, and a request with a
wrong password. Each answer's group is the wrapper's own `opp.utils.check_result_code`. Prints a JSON summary; exits
non-zero on any failure, and with 2 when the wrapper is missing (scripts/bootstrap installs it).

Usage: opp_wrapper_contract.py --url http://127.0.0.1:PORT --user U --password P --entity E --form-json FILE --reference REF
"""
import json
import sys
from importlib.metadata import version

from contract_support import require, simulator_arguments

opp = require("opp", "pip install opp==1.3.1")
for _module in ("opp.config", "opp.core", "opp.facade", "opp.utils"):
    require(_module, "pip install opp==1.3.1")


def main():
    parser = simulator_arguments("PAY.ON's OPP wrapper against the simulator's OPP face")
    parser.add_argument("--entity", required=True)
    parser.add_argument("--form-json", required=True, help="the authorisation form PayPipe sent, without entityId and merchantTransactionId")
    parser.add_argument("--reference", required=True, help="the wrapper's merchantTransactionId")
    args = parser.parse_args()

    opp.config.configure(test_url=args.url + "/v1", mode=opp.config.TEST_INTERNAL, request_timeout=10)
    authentication = opp.facade.Authentication(user_id=args.user, password=args.password, entity_id=args.entity)
    api = opp.facade.API(authentication=authentication)
    core = api.core
    with open(args.form_json) as handle:
        form = json.load(handle)
    summary = {"sdk": version("opp")}
    failures = []

    def expect(name, condition, detail):
        if not condition:
            failures.append(f"{name}: {detail}")

    def group(answer):
        return opp.utils.check_result_code(answer["result"]["code"])

    preauthorised = core.payments().create(**dict(form, merchantTransactionId=args.reference))
    summary["preauthorisation"] = preauthorised["result"]["code"]
    expect("preauthorisation", group(preauthorised) == opp.utils.CODE_SUCCESSFUL and preauthorised.get("paymentType") == "PA", preauthorised)
    payment_id = preauthorised.get("id")

    captured = api.captures(payment_id=payment_id).create(opp.facade.BasicPayment(amount=form["amount"], currency=form["currency"]))
    summary["capture"] = captured.result.code
    expect("capture", captured.response_successful() and captured.payment_type == "CP", vars(captured))

    # A captured pre-authorisation is refunded by its capture's id, as OPP's refund example does (docs/connectors.md).
    refunded = api.refunds(payment_id=captured.id).create(opp.facade.BasicPayment(amount="1.00", currency=form["currency"]))
    summary["refund"] = refunded.result.code
    expect("refund", refunded.response_successful() and refunded.payment_type == "RF", vars(refunded))

    fetched = core.payments(payment_id=payment_id).get()
    expect("get", fetched.get("id") == payment_id and group(fetched) == opp.utils.CODE_SUCCESSFUL, fetched)

    second = core.payments().create(**dict(form, merchantTransactionId=args.reference + "-RV"))
    reversed_ = api.reversals(payment_id=second.get("id")).create()
    summary["reversal"] = reversed_.result.code
    expect("reversal", reversed_.response_successful() and reversed_.payment_type == "RV", vars(reversed_))

    # An amount ending in 51 minor units is the simulator's bank decline.
    declined = core.payments().create(**dict(form, amount=form["amount"][:-2] + "51", paymentType="DB", merchantTransactionId=args.reference + "-D"))
    summary["decline"] = declined["result"]["code"]
    expect("decline", group(declined) == opp.utils.CODE_EXTERNAL_BANK, declined)

    query = opp.core.HTTPClient(args.url + "/v3", authentication.to_params())("GET", {"merchantTransactionId": args.reference}, "/query", None)
    matches = query.get("payments", [])
    summary["query"] = len(matches)
    expect("query", len(matches) == 1 and matches[0].get("id") == payment_id and matches[0].get("merchantTransactionId") == args.reference, query)

    wrong = opp.core.API(**opp.facade.Authentication(args.user, args.password + "-wrong", args.entity).to_params())
    refused = wrong.payments().create(**dict(form, merchantTransactionId=args.reference + "-X"))
    summary["wrong_password"] = refused["result"]["code"]
    expect("wrong password", group(refused) == opp.utils.CODE_VALIDATION, refused)

    summary["ok"] = not failures
    if failures:
        print("\n".join(failures), file=sys.stderr)
    print(json.dumps(summary))
    sys.exit(0 if not failures else 1)


if __name__ == "__main__":
    main()

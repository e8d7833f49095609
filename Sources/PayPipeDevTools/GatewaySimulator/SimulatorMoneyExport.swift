import JWT
import PaymentStages

/// `GET /_sim/payments`: what every face holds per authorisation now, in minor units, for chaos runs to compare with
/// PayPipe's payments (a refund or void that took effect twice shows as more money moved at the gateway than PayPipe
/// recorded). Each entry: `face`, `reference` (the authorisation's reconciliation key, as the ledger names it),
/// `amount`, `refunded` and `voided`; Trust Payments' also `settled` (its `settlebaseamount`, else `baseamount`).
/// Read-only: it changes nothing and answers from the state the faces keep anyway.
enum SimulatorMoneyExport {
    static func payments(ledger: SimulatorLedger, opp: OPPSimulatorFace, tapPay: TapPaySimulatorFace) -> JSONValue {
        var entries: [JSONValue] = []
        // The other faces' authorisations are in the ledger too (``SimulatorEngine/recordForeign``), marked by their id.
        for (reference, item) in ledger.allRecords() where item["oppid"] == nil && item["rectradeid"] == nil {
            let amount = SimulatorRequestValidator.baseAmount(item) ?? 0
            let settled = item["settlebaseamount"].flatMap { SimulatorRequestValidator.baseAmount(["baseamount": $0]) } ?? amount
            entries.append([
                "face": "trustpayments", "reference": .string(reference), "amount": .integer(amount), "settled": .integer(settled),
                "refunded": .integer(item["_refunded"]?.int64Value ?? 0),
                "voided": .bool(item["errorcode"]?.stringValue == "0" && item["settlestatus"]?.stringValue == "3"),
            ])
        }
        for payment in opp.payments.withLock({ Array($0.values) }) {
            guard let reference = payment.reference else { continue }
            entries.append([
                "face": "opp", "reference": .string(reference), "amount": .integer(payment.amountMinor), "captured": .integer(payment.captured),
                "refunded": .integer(payment.refunded), "voided": .bool(payment.reversed),
            ])
        }
        for trade in tapPay.trades.withLock({ Array($0.values) }) {
            // TapPay's amounts are in the currency's own units (TWD whole dollars).
            let currency = trade.record["currency"]?.stringValue ?? ""
            let minor = { (amount: Int64) in TapPayWire.minorUnits(amount, currency: currency) ?? amount }
            entries.append([
                "face": "tappay", "reference": trade.record["bank_transaction_id"] ?? .null, "amount": .integer(minor(trade.amount)),
                "captured": .bool(trade.captured), "refunded": .integer(minor(trade.refunded)), "voided": false,
            ])
        }
        return ["payments": .array(entries)]
    }
}

import Foundation
import HTTP
import JWT
import PaymentStages
import Pipeline
import Synchronization

/// The simulator's TapPay face (docs/connectors.md): `POST /tpc/payment/pay-by-prime`, the Record API
/// `POST /tpc/transaction/query`, `POST /tpc/transaction/cap` and `POST /tpc/transaction/refund`, JSON with `x-api-key`.
///
/// Validated like TapPay's error page [doc]: 80 for an unknown `x-api-key` (or one that is not the body's
/// `partner_key`), 61 for a `merchant_id` the partner does not hold, 501-509 for a missing argument (cardholder,
/// merchant_id, prime, currency, details, partner_key, phone_number, name, email), 510 for an amount that is not a
/// positive integer, 89 for a currency TapPay's amounts are not documented for, 121 for a prime used before. A prime
/// `sim_<unix ms>_…` expires 90 s after that time (91); a deferred payment's `sim_deferred_<unix ms>_…` 30 days after
/// it, its amount set by the Pay by Prime as TapPay documents (validated like any other); TapPay's documented sandbox
/// primes never expire.
///
/// Behaviour by the sent amount (``SimulatorBehaviour``): `…51` a bank decline (status 10003, recorded `record_status`
/// -1, which PayPipe reads from the Record API), `…99` recorded as authorised but answered 421 (gateway timeout), lost and
/// slow answers as the other faces.
public final class TapPaySimulatorFace: Sendable {
    struct Trade: Sendable {
        var record: JSONValue
        let amount: Int64
        var refunded: Int64 = 0
        var captured: Bool
    }

    let trades = Mutex<[String: Trade]>([:])
    private let usedPrimes = Mutex(Set<String>())
    private let sequence = Mutex(0)

    /// TapPay's documented sandbox primes (Apple Pay and Direct Pay) [doc].
    public static let sandboxPrimes: Set<String> = [
        "ap_test_utigjeyfutj5867uyjhuty47rythfjru485768tigjfheufhtu5i6ojk",
        "test_3a2fb2b7e892b914a03c95dd4dd5dc7970c908df67a49527c0a648b2bc9",
    ]

    init() {}

    static func paths(_ path: String) -> Bool { path.hasPrefix("/tpc/") }

    func route(_ request: HTTPServerRequest, engine: SimulatorEngine, configuration: GatewaySimulatorConfiguration, holds: SimulatorHolds) -> HTTPServerResponse {
        guard request.method == "POST" else { return .text("not found\n", status: 404) }
        guard let body = try? JSONValue.parse(request.body), body.objectValue != nil else { return Self.answer(status: 5, "Wrong JSON format") }
        guard let key = request.header("x-api-key"), let merchant = configuration.tapPayPartners[key] else {
            return Self.answer(status: 80, "Invalid x-api-key or app key")
        }
        guard body["partner_key"]?.stringValue == key else { return Self.answer(status: 506, "missing or wrong argument: partner_key") }
        switch request.path {
        case TapPayWire.payByPrimePath: return payByPrime(body, merchant: merchant, engine: engine, holds: holds)
        case TapPayWire.recordPath: return recordQuery(body, merchant: merchant)
        case TapPayWire.capturePath, TapPayWire.refundPath:
            return operation(body, capture: request.path == TapPayWire.capturePath, merchant: merchant, engine: engine, holds: holds)
        default: return .text("not found\n", status: 404)
        }
    }

    static func answer(status: Int, _ message: String, _ extra: [(key: String, value: JSONValue)] = []) -> HTTPServerResponse {
        .json(JSONValue.object([("status", .integer(Int64(status))), ("msg", .string(message))] + extra).serialized())
    }

    /// The status of a Pay-by-Prime request's first invalid argument, or nil.
    static func invalidArgument(_ body: JSONValue) -> (Int, String)? {
        let cardholder = body["cardholder"]
        let required: [(Int, String, JSONValue?)] = [
            (501, "cardholder", cardholder?.objectValue == nil ? nil : cardholder), (502, "merchant_id", body["merchant_id"]),
            (503, "prime", body["prime"]), (504, "currency", body["currency"]), (505, "details", body["details"]),
            (507, "phone_number", cardholder?["phone_number"]), (508, "name", cardholder?["name"]), (509, "email", cardholder?["email"]),
        ]
        for (status, name, value) in required where value == nil || (value?.stringValue == nil && value?.objectValue == nil) {
            return (status, "missing argument: \(name)")
        }
        // Every cardholder key present, "" when unknown [sdk].
        for key in ["zip_code", "address", "national_id"] where cardholder?[key]?.stringValue == nil { return (501, "missing argument: cardholder.\(key)") }
        guard let amount = body["amount"]?.int64Value, amount > 0 else { return (510, "invalid amount") }
        guard TapPayWire.minorUnits(amount, currency: body["currency"]?.stringValue ?? "") != nil else { return (89, "currency not supported") }
        guard let details = body["details"]?.stringValue, !details.isEmpty, details.count <= TapPaySettings.maximumDetailsLength else { return (515, "Out of range: details") }
        guard let prime = body["prime"]?.stringValue, (1...71).contains(prime.utf8.count) else { return (121, "Invalid arguments: prime") }
        return nil
    }

    /// Whether a `sim_<unix ms>_…` prime is older than 90 s, or a deferred `sim_deferred_<unix ms>_…` one older than 30 days.
    static func expired(_ prime: String, now: Date = Date()) -> Bool {
        var parts = prime.split(separator: "_")[...]
        guard parts.popFirst() == "sim" else { return false }
        let kind: TapPayPrimeAge.Kind = parts.first == "deferred" ? .deferred : .ordinary
        if kind == .deferred { parts = parts.dropFirst() }
        guard let millis = parts.first.flatMap({ Double($0) }) else { return false }
        return now.timeIntervalSince1970 - millis / 1000 > kind.lifetime
    }

    private func nextTradeId() -> String {
        let number = sequence.withLock { value in
            value += 1
            return value
        }
        return String(format: "D%019d", number)
    }

    private func payByPrime(_ body: JSONValue, merchant: String, engine: SimulatorEngine, holds: SimulatorHolds) -> HTTPServerResponse {
        if let (status, message) = Self.invalidArgument(body) { return Self.answer(status: status, message) }
        guard body["merchant_id"]?.stringValue == merchant else { return Self.answer(status: 61, "Merchant not found") }
        let prime = body["prime"]!.stringValue!
        if Self.expired(prime) { return Self.answer(status: 91, "Expired prime") }
        let reference = body["bank_transaction_id"]?.stringValue ?? ""
        if holds.losesUnprocessed(requestTypes: ["AUTH"], orderReference: reference) { return .connectionReset }
        if let fault = engine.faultBeforeProcessing() { return OPPSimulatorFace.respond(fault, body: [:]) }
        guard Self.sandboxPrimes.contains(prime) || usedPrimes.withLock({ $0.insert(prime).inserted }) else {
            return Self.answer(status: 121, "Invalid arguments: prime")
        }
        let amount = body["amount"]!.int64Value!
        let currency = body["currency"]!.stringValue!
        let behaviour = SimulatorBehaviour.forAmount(amount)
        if behaviour == .serverError { return .text("internal server error\n", status: 500) }
        let declined = behaviour == .decline
        let trade = nextTradeId()
        let delay = body["delay_capture_in_days"]?.int64Value ?? 0
        let record: JSONValue = [
            "rec_trade_id": .string(trade), "bank_transaction_id": .string(reference), "order_number": body["order_number"] ?? "",
            "amount": .integer(amount), "currency": .string(currency), "record_status": .integer(declined ? -1 : (delay == 0 ? 1 : 0)),
            "is_captured": .bool(!declined && delay == 0), "refund_amount": 0, "auth_code": declined ? "" : "SIM042",
            "merchant_id": .string(merchant), "time": .integer(Int64(Date().timeIntervalSince1970 * 1000)),
        ]
        trades.withLock { $0[trade] = Trade(record: record, amount: amount, captured: !declined && delay == 0) }
        engine.recordForeign(reference: reference, amountMinor: TapPayWire.minorUnits(amount, currency: currency) ?? amount, currency: currency,
                             authorised: !declined, maskedPan: "424242######4242", extra: [("rectradeid", .string(trade))])
        holds.awaitRelease(requestTypes: ["AUTH"], orderReference: reference)
        var extra: [(key: String, value: JSONValue)] = [
            ("rec_trade_id", .string(trade)), ("bank_transaction_id", .string(reference)), ("amount", .integer(amount)), ("currency", .string(currency)),
            ("order_number", body["order_number"] ?? ""), ("acquirer", "SIM_BANK"),
            ("card_info", ["bin_code": "424242", "last_four": "4242", "funding": 0, "type": 1, "issuer": "", "level": "", "country": "",
                           "country_code": "", "expiry_date": "203012"]),
            ("transaction_time_millis", .integer(Int64(Date().timeIntervalSince1970 * 1000))),
            ("bank_result_code", declined ? "05" : "00"), ("bank_result_msg", ""),
        ]
        var (status, message) = declined ? (10003, "Card error") : (0, "Success")
        if !declined { extra.append(("auth_code", "SIM042")) }
        if behaviour == .unknownError { (status, message) = (421, "Gateway Timeout") }
        var delivery = engine.deliveryAfterRecording(behaviour)
        if delivery == .forged {
            extra = extra.map { $0.key == "bank_transaction_id" ? (key: $0.key, value: .string("FORGED-\(reference)")) : $0 }
            delivery = .answer
        }
        return OPPSimulatorFace.respond(delivery, body: .object([("status", .integer(Int64(status))), ("msg", .string(message))] + extra))
    }

    private func recordQuery(_ body: JSONValue, merchant: String) -> HTTPServerResponse {
        guard let filters = body["filters"], filters.objectValue != nil else { return Self.answer(status: 5, "missing filters") }
        let reference = filters["bank_transaction_id"]?.stringValue
        let trade = filters["rec_trade_id"]?.stringValue
        let start = filters["time"]?["start_time"]?.int64Value ?? Int64.min
        let end = filters["time"]?["end_time"]?.int64Value ?? Int64.max
        let found = trades.withLock { all in
            all.values.map(\.record).filter { record in
                record["merchant_id"]?.stringValue == merchant && (reference == nil || record["bank_transaction_id"]?.stringValue == reference)
                    && (trade == nil || record["rec_trade_id"]?.stringValue == trade)
                    && (start...end).contains(record["time"]?.int64Value ?? 0)
            }
        }
        return Self.answer(status: found.isEmpty ? 2 : 0, found.isEmpty ? "no more records" : "Success", [
            ("records_per_page", body["records_per_page"] ?? 50), ("page", body["page"] ?? 0), ("total_page_count", found.isEmpty ? 0 : 1),
            ("number_of_transactions", .integer(Int64(found.count))), ("trade_records", .array(found)),
        ])
    }

    /// `/tpc/transaction/cap` (the whole trade, once [doc]) or `/tpc/transaction/refund` (all that is left, or
    /// `amount` of it, never more in total [sdk]) of one of the partner's trades by `rec_trade_id`. TapPay documents no
    /// refusal of a refund before capture, so none is simulated. One that took effect is on the operation ledger
    /// (``SimulatorEngine/recordOperation(_:)``) and shown by the Record API (`is_captured`, `refund_amount`); lost and
    /// slow answers as every operation's, test holds by `cap` / `refund` and the trade's `bank_transaction_id`.
    private func operation(_ body: JSONValue, capture: Bool, merchant: String, engine: SimulatorEngine, holds: SimulatorHolds) -> HTTPServerResponse {
        let type = capture ? "cap" : "refund"
        guard let trade = body["rec_trade_id"]?.stringValue, let original = trades.withLock({ $0[trade] }),
              original.record["merchant_id"]?.stringValue == merchant else {
            return Self.answer(status: 121, "Invalid arguments: rec_trade_id")
        }
        if !capture, let amount = body["amount"], (amount.int64Value ?? 0) <= 0 { return Self.answer(status: 510, "invalid amount") }
        let reference = original.record["bank_transaction_id"]?.stringValue ?? ""
        if holds.losesUnprocessed(requestTypes: [type], orderReference: reference) || engine.losesOperation() { return .connectionReset }
        let outcome: (status: Int, message: String, amount: Int64) = trades.withLock { all in
            guard var entry = all[trade], entry.record["record_status"]?.int64Value != -1 else { return (121, "Invalid arguments: rec_trade_id", 0) }
            if capture {
                guard !entry.captured else { return (10009, "already captured", 0) }
                entry.captured = true
                entry.record.set(true, forKey: "is_captured")
                entry.record.set(1, forKey: "record_status")
                all[trade] = entry
                return (0, "Success", entry.amount)
            }
            let amount = body["amount"]?.int64Value ?? (entry.amount - entry.refunded)
            guard amount > 0, entry.refunded + amount <= entry.amount else { return (510, "invalid amount", 0) }
            entry.refunded += amount
            entry.record.set(.integer(entry.refunded), forKey: "refund_amount")
            entry.record.set(.integer(entry.refunded == entry.amount ? 3 : 2), forKey: "record_status")
            all[trade] = entry
            return (0, "Success", amount)
        }
        let tookEffect = outcome.status == 0
        if tookEffect {
            let currency = original.record["currency"]?.stringValue ?? ""
            engine.recordOperation([
                ("connector", "tappay"), ("requesttypedescription", .string(type)), ("transactionreference", .string(trade)),
                ("orderreference", .string(reference)), ("baseamount", .string(String(TapPayWire.minorUnits(outcome.amount, currency: currency) ?? outcome.amount))),
            ])
        }
        var delivery = engine.operationDelivery(tookEffect: tookEffect)
        if holds.losesProcessed(requestTypes: [type], orderReference: reference) { delivery = .connectionReset }
        holds.awaitRelease(requestTypes: [type], orderReference: reference)
        let answer = JSONValue.object([("status", .integer(Int64(outcome.status))), ("msg", .string(outcome.message)), ("rec_trade_id", .string(trade))])
        return tookEffect ? OPPSimulatorFace.respond(delivery, body: answer) : .json(answer.serialized())
    }
}

import Crypto
import Foundation
import JWT

/// The gateway's decisions, free of HTTP and JWT handling: validates fields, applies the amount-selected
/// ``SimulatorBehaviour``, records AUTHs in the ``SimulatorLedger`` and answers TRANSACTIONQUERY from it.
public struct SimulatorEngine: Sendable {
    public let ledger: SimulatorLedger
    public let slowResponseSeconds: Double
    public let faultRate: Double
    /// Probability that an AUTH answered normally is instead answered after `slowResponseSeconds` (the AUTH is
    /// recorded first): a lost answer the client must reconcile.
    public let timeoutRate: Double
    /// Probability that an AUTH answered normally instead has its connection dropped after the AUTH is recorded.
    public let resetRate: Double
    /// Probability that an AUTH is dropped before it is processed (connection reset, nothing recorded): an answer
    /// lost before processing, which the client cannot tell from one lost after.
    public let loseRate: Double
    public let dice: SimulatorDice
    /// Seconds after which an AUTH pending settlement (settlestatus 0 or 1) reads as settled (100), which REFUND
    /// needs of its parent; nil: never.
    public let settleDelaySeconds: Double?
    /// The clock of settlement (tests move it).
    let clock: @Sendable () -> Double

    public init(
        ledger: SimulatorLedger, slowResponseSeconds: Double, faultRate: Double = 0, timeoutRate: Double = 0, resetRate: Double = 0,
        loseRate: Double = 0, dice: SimulatorDice = SimulatorDice(), settleDelaySeconds: Double? = nil,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.settleDelaySeconds = settleDelaySeconds
        self.clock = clock
        self.loseRate = loseRate
        self.dice = dice
        self.ledger = ledger
        self.slowResponseSeconds = slowResponseSeconds
        self.faultRate = faultRate
        self.timeoutRate = timeoutRate
        self.resetRate = resetRate
    }

    /// Handles one request whose fields (JWT payload merged with the request object) are `fields`; `requestReference`
    /// (the request object's) is what the operation ledger records a TRANSACTIONUPDATE or REFUND under.
    public func handle(requestTypes: [String], fields: JSONValue, requestReference: String? = nil) -> SimulatorReply {
        if faultRate > 0, dice.next() < faultRate {
            return SimulatorReply(items: [], delivery: .unavailable)
        }
        guard !requestTypes.isEmpty, requestTypes.allSatisfy(SimulatorRequestValidator.knownRequestTypes.contains) else {
            return SimulatorReply(items: [Self.item(requestTypes.last ?? "ERROR", code: "60018", message: "Invalid requesttype")])
        }
        if requestTypes == ["TRANSACTIONQUERY"] { return query(fields) }
        if requestTypes == ["TRANSACTIONUPDATE"] || requestTypes == ["REFUND"] {
            return operation(requestTypes[0], fields: fields, requestReference: requestReference)
        }
        guard requestTypes.contains("AUTH") else {
            return SimulatorReply(items: requestTypes.map { Self.item($0, code: "0", message: "Ok") })
        }
        let parent = { (reference: String) in self.ledger.records(matching: [("transactionreference", [reference])], limit: 1).first }
        if let field = SimulatorRequestValidator.invalidAuthField(fields) ?? TrustPaymentsStoredCredentialRules.invalidField(fields, parent: parent) {
            return SimulatorReply(items: [Self.item("AUTH", code: "30000", message: "Invalid field", extra: [
                ("errordata", [.string(field)]), ("customeroutput", "RESULT"),
            ])])
        }
        if loseRate > 0, dice.next() < loseRate {
            return SimulatorReply(items: [], delivery: .connectionReset)
        }
        // The validator guarantees an amount.
        let amount = SimulatorRequestValidator.baseAmount(fields)!
        let behaviour = SimulatorBehaviour.forAmount(amount)
        let threeD = requestTypes.contains("THREEDQUERY")
            ? [Self.item("THREEDQUERY", code: "0", message: "Ok", extra: [("enrolled", "Y"), ("status", "Y"), ("threedversion", "2.2.0")])]
            : []
        switch behaviour {
        case .serverError:
            return SimulatorReply(items: [], delivery: .serverError)
        case .invalidField:
            return SimulatorReply(items: threeD + [Self.item("AUTH", code: "30000", message: "Invalid field", extra: [
                ("errordata", ["sitereference"]), ("customeroutput", "RESULT"),
            ])])
        case .locked:
            return SimulatorReply(items: threeD + [Self.item("AUTH", code: "79001", message: "Record temporarily locked", extra: [("customeroutput", "RESULT")])])
        case .challenge:
            guard threeD.isEmpty else {
                return SimulatorReply(items: [Self.item("THREEDQUERY", code: "0", message: "Ok", extra: [
                    ("enrolled", "Y"), ("customeroutput", "THREEDREDIRECT"), ("acsurl", "https://acs.simulator.invalid/challenge"),
                ])])
            }
            return SimulatorReply(items: [Self.item("AUTH", code: "60022", message: "Unauthenticated", extra: [("customeroutput", "RESULT")])])
        case .authorize, .decline, .unknownError, .slowAfterRecording, .connectionReset, .manualReview, .forgedSignature,
             .cancelled, .suspended, .unavailableAfterRecording:
            break
        }
        let recorded = authItem(fields, amount: amount, behaviour: behaviour)
        ledger.record(orderReference: fields["orderreference"]?.stringValue ?? "", item: recorded)
        var answered = Self.visible(recorded)
        if behaviour == .unknownError {
            answered = Self.item("AUTH", code: "99999", message: "Unknown error", extra: [("customeroutput", "RESULT")])
        }
        return SimulatorReply(items: threeD + [answered], delivery: deliveryAfterRecording(behaviour))
    }

    /// How the answer to an authorisation the ledger now holds is delivered: as its behaviour says, or with an injected
    /// fault (chaos runs: the AUTH is on the ledger, the answer never arrives in time). Every face shares it.
    public func deliveryAfterRecording(_ behaviour: SimulatorBehaviour) -> SimulatorReply.Delivery {
        var delivery: SimulatorReply.Delivery = switch behaviour {
        case .slowAfterRecording: .slow(slowResponseSeconds)
        case .connectionReset: .connectionReset
        case .forgedSignature: .forged
        case .unavailableAfterRecording: .unavailable
        default: .answer
        }
        if delivery == .answer, timeoutRate > 0 || resetRate > 0 {
            let draw = dice.next()
            if draw < timeoutRate {
                delivery = .slow(slowResponseSeconds)
            } else if draw < timeoutRate + resetRate {
                delivery = .connectionReset
            }
        }
        return delivery
    }

    /// An injected fault before an authorisation is processed (nothing recorded): HTTP 503 or a dropped connection.
    public func faultBeforeProcessing() -> SimulatorReply.Delivery? {
        if faultRate > 0, dice.next() < faultRate { return .unavailable }
        if loseRate > 0, dice.next() < loseRate { return .connectionReset }
        return nil
    }

    /// Records an authorisation of another face in the ledger, in the fields the chaos checker reads (`baseamount`,
    /// `currencyiso3a`, `errorcode` "0" when authorised, `maskedpan`), so "at most one per payment" is counted the same way.
    public func recordForeign(reference: String, amountMinor: Int64, currency: String, authorised: Bool, maskedPan: String?, extra: [(String, JSONValue)]) {
        var fields: [(String, JSONValue)] = [
            ("transactionreference", .string(ledger.nextTransactionReference())), ("baseamount", .string(String(amountMinor))),
            ("currencyiso3a", .string(currency)), ("orderreference", .string(reference)),
            ("settlestatus", authorised ? "0" : "3"), (Self.recordedAtKey, .double(clock())),
        ]
        if let maskedPan { fields.append(("maskedpan", .string(maskedPan))) }
        ledger.record(orderReference: reference, item: Self.item("AUTH", code: authorised ? "0" : "70000", message: authorised ? "Ok" : "Decline", extra: fields + extra))
    }

    /// A TRANSACTIONUPDATE or REFUND with the same injected faults as an AUTH: dropped before processing
    /// (`loseRate`), or processed and then answered too late (`timeoutRate`) or not at all (`resetRate`): the lost and
    /// slow answers a client must reconcile. One that took effect is on the operation ledger under its request reference.
    private func operation(_ type: String, fields: JSONValue, requestReference: String?) -> SimulatorReply {
        if losesOperation() {
            return SimulatorReply(items: [], delivery: .connectionReset)
        }
        let item = type == "REFUND" ? refund(fields) : transactionUpdate(fields)
        let tookEffect = item["errorcode"]?.stringValue == "0"
        if tookEffect {
            let target = fields["parenttransactionreference"] ?? fields["filter"]?["transactionreference"]?[0]?["value"] ?? .null
            recordOperation([
                ("requesttypedescription", .string(type)), ("requestreference", requestReference.map(JSONValue.string)),
                ("transactionreference", target), ("updates", fields["updates"]), ("baseamount", item["baseamount"]),
                ("refundreference", type == "REFUND" ? item["transactionreference"] : nil),
            ])
        }
        return SimulatorReply(items: [item], delivery: operationDelivery(tookEffect: tookEffect))
    }

    // MARK: Back-office operations, every face

    /// Whether an operation request (a TRANSACTIONUPDATE or REFUND, an OPP `CP`/`RV`/`RF`, a TapPay cap or refund) is
    /// dropped before it is processed (`loseRate`): nothing takes effect, the connection is reset.
    public func losesOperation() -> Bool {
        loseRate > 0 && dice.next() < loseRate
    }

    /// How the answer of a processed operation is delivered: one that took effect may be answered too late
    /// (`timeoutRate`) or not at all (`resetRate`), the lost and slow answers a client must reconcile; a refusal is
    /// answered.
    public func operationDelivery(tookEffect: Bool) -> SimulatorReply.Delivery {
        guard tookEffect, timeoutRate > 0 || resetRate > 0 else { return .answer }
        let draw = dice.next()
        if draw < timeoutRate { return .slow(slowResponseSeconds) }
        if draw < timeoutRate + resetRate { return .connectionReset }
        return .answer
    }

    /// Puts an operation that took effect on the operation ledger (``SimulatorLedger/operations``), stamped `at` now:
    /// `requesttypedescription`, `transactionreference` (the payment it acted on), `baseamount` (minor units) and, for the
    /// other faces, `connector`, `orderreference` (the payment's per-payment reference) and `requestreference` (OPP: the
    /// operation's own `merchantTransactionId`).
    public func recordOperation(_ fields: [(String, JSONValue?)]) {
        ledger.recordOperation(.object(omittingAbsent: fields + [("at", .double(clock()))]))
    }

    private func authItem(_ fields: JSONValue, amount: Int64, behaviour: SimulatorBehaviour) -> JSONValue {
        let (code, message) = behaviour.recordedCode
        // An authorised AUTH requesting settle status 0, 1 or 2 gets it: 2 suspends it (manual capture; help article
        // 4403193579665 "How do I suspend a payment": "the field settlestatus can be included with value 2").
        var settle = behaviour.recordedSettleStatus
        if behaviour == .authorize, let requested = fields["settlestatus"]?.stringValue, ["0", "1", "2"].contains(requested) {
            settle = requested
        }
        var extra: [(String, JSONValue)] = [
            ("transactionreference", .string(ledger.nextTransactionReference())),
            ("acquirerresponsecode", code == "0" ? "00" : "05"),
            ("settlestatus", .string(settle)),
            ("baseamount", .string(String(amount))),
            ("currencyiso3a", fields["currencyiso3a"] ?? .null),
            ("orderreference", fields["orderreference"] ?? .null),
            ("sitereference", fields["sitereference"] ?? .null),
            ("paymenttypedescription", "VISA"),
            ("livestatus", "0"),
            (Self.recordedAtKey, .double(clock())),
        ]
        if code == "0" {
            extra.append(("authcode", "SIM42"))
            // The day its settlement run takes it (trustpayments.md §3 [doc example]): the UTC date the settle delay ends.
            extra.append(("settleduedate", .string(Self.utcDate(Date().addingTimeInterval(settleDelaySeconds ?? 0)))))
        }
        if let masked = SimulatorRequestValidator.maskedPan(fields["pan"]?.stringValue) { extra.append(("maskedpan", .string(masked))) }
        // A stored-credential AUTH keeps its fields, as a child AUTH shows its parent (tests read them off the ledger).
        for name in ["parenttransactionreference", "credentialsonfile", "initiationreason", "subscriptiontype"] {
            if let value = fields[name]?.stringValue { extra.append((name, .string(value))) }
        }
        if let account = fields["accounttypedescription"]?.stringValue { extra.append(("accounttypedescription", .string(account))) }
        extra.append(("customeroutput", "RESULT"))
        return Self.item("AUTH", code: code, message: message, extra: extra)
    }

    /// `YYYY-MM-DD` in UTC, on every authorised AUTH: civil-date arithmetic, not a DateFormatter built per answer.
    static func utcDate(_ date: Date) -> String {
        let (year, month, day) = ASN1Time.civil(fromDays: Int((date.timeIntervalSince1970 / 86_400).rounded(.down)))
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))"
    }

    /// Fields a TRANSACTIONQUERY or TRANSACTIONUPDATE may filter by (the docs' "Transaction queries" page lists these
    /// among others; the simulator records no more).
    public static let filterFields: Set<String> = [
        "sitereference", "orderreference", "transactionreference", "parenttransactionreference", "currencyiso3a",
        "requesttypedescription", "settlestatus", "errorcode", "baseamount",
    ]

    /// A record's private key: when it was recorded (never shown).
    static let recordedAtKey = "_recordedat"

    /// The filter of a request: every member an array of `{"value": string}`, at least one of them. 60037 "Invalid
    /// filters" for an unknown field or a malformed one, 60019 "No searchable filter specified" for none
    /// (errormessages.json; which of the two the gateway uses for a missing filter is unconfirmed).
    static func filters(_ fields: JSONValue, type: String) -> Result<[(field: String, values: Set<String>)], SimulatorReplyError> {
        guard let filter = fields["filter"] else { return .failure(.init(item(type, code: "60019", message: "No searchable filter specified"))) }
        guard let members = filter.objectValue else { return .failure(.init(item(type, code: "60037", message: "Invalid filters", extra: [("errordata", ["filter"])]))) }
        var result: [(field: String, values: Set<String>)] = []
        for (field, value) in members {
            guard filterFields.contains(field), let entries = value.arrayValue, !entries.isEmpty else {
                return .failure(.init(item(type, code: "60037", message: "Invalid filters", extra: [("errordata", [.string(field)])])))
            }
            var values = Set<String>()
            for entry in entries {
                guard let text = entry["value"]?.stringValue else {
                    return .failure(.init(item(type, code: "60037", message: "Invalid filters", extra: [("errordata", [.string(field)])])))
                }
                values.insert(text)
            }
            result.append((field, values))
        }
        guard !result.isEmpty else { return .failure(.init(item(type, code: "60019", message: "No searchable filter specified"))) }
        return .success(result)
    }

    private func query(_ fields: JSONValue) -> SimulatorReply {
        switch Self.filters(fields, type: "TRANSACTIONQUERY") {
        case .failure(let error): return SimulatorReply(items: [error.item])
        case .success(let filters):
            let records = ledger.records(matching: filters, limit: 500).map(shown)
            return SimulatorReply(items: [Self.item("TRANSACTIONQUERY", code: "0", message: "Ok", extra: [("records", .array(records))])])
        }
    }

    /// A record without its private keys.
    static func visible(_ record: JSONValue) -> JSONValue {
        .object((record.objectValue ?? []).filter { !$0.key.hasPrefix("_") })
    }

    /// A record as the gateway shows it: its settlement as of now, without private keys.
    func shown(_ record: JSONValue) -> JSONValue {
        var shown = Self.visible(record)
        if let settle = settled(record) { shown.set(.string(settle), forKey: "settlestatus") }
        return shown
    }

    /// "100" when a record pending settlement has been so for longer than the settlement delay: since it was recorded,
    /// or since a TRANSACTIONUPDATE released it (a suspended AUTH captured later settles in a later run).
    func settled(_ record: JSONValue) -> String? {
        guard let delay = settleDelaySeconds, let status = record["settlestatus"]?.stringValue, status == "0" || status == "1",
              record["errorcode"]?.stringValue == "0",
              let at = record[Self.releasedAtKey]?.doubleValue ?? record[Self.recordedAtKey]?.doubleValue, clock() - at >= delay else { return nil }
        return "100"
    }

    /// A record's private key: when a TRANSACTIONUPDATE last released it for settlement (never shown).
    static let releasedAtKey = "_releasedat"

    /// TRANSACTIONUPDATE (docs' "Transaction updates"): `filter` by `transactionreference` (with any `sitereference`),
    /// `updates` of `settlestatus` (0, 1, 2, 3) or `settlebaseamount`; only an AUTH or REFUND still pending (0, 1, 2)
    /// can be updated (60017 "Transaction not updatable" otherwise).
    private func transactionUpdate(_ fields: JSONValue) -> JSONValue {
        let type = "TRANSACTIONUPDATE"
        let filters: [(field: String, values: Set<String>)]
        switch Self.filters(fields, type: type) {
        case .failure(let error): return error.item
        case .success(let found): filters = found
        }
        guard let references = filters.first(where: { $0.field == "transactionreference" })?.values, references.count == 1,
              let reference = references.first else {
            return Self.item(type, code: "60037", message: "Invalid filters", extra: [("errordata", ["transactionreference"])])
        }
        guard let updates = fields["updates"]?.objectValue, !updates.isEmpty else {
            return Self.item(type, code: "60013", message: "No valid updates specified")
        }
        for (key, value) in updates {
            switch key {
            case "settlestatus" where ["0", "1", "2", "3"].contains(value.stringValue ?? ""): continue
            case "settlebaseamount" where SimulatorRequestValidator.baseAmount(["baseamount": value]) != nil: continue
            default: return Self.item(type, code: "60033", message: "Invalid updates specified", extra: [("errordata", [.string(key)])])
            }
        }
        let site = filters.first { $0.field == "sitereference" }?.values
        let answer: JSONValue? = ledger.update(transactionReference: reference) { record in
            if let site, !site.contains(record["sitereference"]?.stringValue ?? "") {
                return Self.item(type, code: "60014", message: "Transaction reference not found")
            }
            let current = settled(record) ?? record["settlestatus"]?.stringValue ?? ""
            guard ["AUTH", "REFUND"].contains(record["requesttypedescription"]?.stringValue ?? ""), ["0", "1", "2"].contains(current),
                  record["errorcode"]?.stringValue == "0" else {
                return Self.item(type, code: "60017", message: "Transaction not updatable")
            }
            if let amount = updates.first(where: { $0.key == "settlebaseamount" }).flatMap({ SimulatorRequestValidator.baseAmount(["baseamount": $0.value]) }) {
                guard let base = SimulatorRequestValidator.baseAmount(record), amount <= base else {
                    return Self.item(type, code: "60016", message: "settlebaseamount too large")
                }
                record.set(.string(String(amount)), forKey: "settlebaseamount")
            }
            if let status = updates.first(where: { $0.key == "settlestatus" })?.value {
                if ["0", "1"].contains(status.stringValue ?? ""), current == "2" { record.set(.double(clock()), forKey: Self.releasedAtKey) }
                record.set(status, forKey: "settlestatus")
            }
            return Self.item(type, code: "0", message: "Ok")
        }
        return answer ?? Self.item(type, code: "60014", message: "Transaction reference not found")
    }

    /// REFUND (help article "Refunds"): of a settled (settlestatus 100) AUTH parent, the whole or `baseamount` of it,
    /// never more in total than the parent's (settle) amount.
    private func refund(_ fields: JSONValue) -> JSONValue {
        let type = "REFUND"
        guard let parent = fields["parenttransactionreference"]?.stringValue, !parent.isEmpty else {
            return Self.item(type, code: "20004", message: "Missing parent")
        }
        let requested = fields["baseamount"].map { SimulatorRequestValidator.baseAmount(["baseamount": $0]) }
        if case .some(nil) = requested { return Self.item(type, code: "30000", message: "Invalid field", extra: [("errordata", ["baseamount"])]) }
        let outcome: Result<(amount: Int64, record: JSONValue), SimulatorReplyError>? = ledger.update(transactionReference: parent) { record in
            if let site = fields["sitereference"]?.stringValue, record["sitereference"]?.stringValue != site {
                return .failure(.init(Self.item(type, code: "20004", message: "Missing parent")))
            }
            guard record["requesttypedescription"]?.stringValue == "AUTH" else { return .failure(.init(Self.item(type, code: "20006", message: "Refund requires authorisation parent"))) }
            guard record["errorcode"]?.stringValue == "0" else { return .failure(.init(Self.item(type, code: "20011", message: "Cannot refund a decline transaction"))) }
            guard (settled(record) ?? record["settlestatus"]?.stringValue) == "100" else {
                return .failure(.init(Self.item(type, code: "20012", message: "Refund requires a settled parent")))
            }
            let settledAmount = SimulatorRequestValidator.baseAmount(["baseamount": record["settlebaseamount"] ?? record["baseamount"] ?? .null]) ?? 0
            let refunded = record["_refunded"]?.int64Value ?? 0
            let amount = (requested ?? nil) ?? (settledAmount - refunded)
            guard amount > 0, refunded + amount <= settledAmount else { return .failure(.init(Self.item(type, code: "20007", message: "Refund amount too great"))) }
            record.set(.integer(refunded + amount), forKey: "_refunded")
            return .success((amount, record))
        }
        switch outcome {
        case nil: return Self.item(type, code: "20004", message: "Missing parent")
        case .failure(let error): return error.item
        case .success(let (amount, parentRecord)):
            let item = Self.item(type, code: "0", message: "Ok", extra: [
                ("transactionreference", .string(ledger.nextTransactionReference())), ("parenttransactionreference", .string(parent)),
                ("baseamount", .string(String(amount))), ("currencyiso3a", parentRecord["currencyiso3a"] ?? .null),
                ("orderreference", parentRecord["orderreference"] ?? .null), ("sitereference", parentRecord["sitereference"] ?? .null),
                ("settlestatus", "0"), ("acquirerresponsecode", "00"), (Self.recordedAtKey, .double(clock())),
            ])
            ledger.recordOther(item)
            return shown(item)
        }
    }

    static func item(_ type: String, code: String, message: String, extra: [(String, JSONValue)] = []) -> JSONValue {
        .object([("requesttypedescription", .string(type)), ("errorcode", .string(code)), ("errormessage", .string(message))]
                + extra.map { (key: $0.0, value: $0.1) })
    }
}

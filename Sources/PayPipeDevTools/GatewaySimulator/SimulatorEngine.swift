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

    public init(
        ledger: SimulatorLedger, slowResponseSeconds: Double, faultRate: Double = 0, timeoutRate: Double = 0, resetRate: Double = 0,
        loseRate: Double = 0, dice: SimulatorDice = SimulatorDice()
    ) {
        self.loseRate = loseRate
        self.dice = dice
        self.ledger = ledger
        self.slowResponseSeconds = slowResponseSeconds
        self.faultRate = faultRate
        self.timeoutRate = timeoutRate
        self.resetRate = resetRate
    }

    /// Handles one request whose fields (JWT payload merged with the request object) are `fields`.
    public func handle(requestTypes: [String], fields: JSONValue) -> SimulatorReply {
        if faultRate > 0, dice.next() < faultRate {
            return SimulatorReply(items: [], delivery: .unavailable)
        }
        guard !requestTypes.isEmpty, requestTypes.allSatisfy(SimulatorRequestValidator.knownRequestTypes.contains) else {
            return SimulatorReply(items: [Self.item(requestTypes.last ?? "ERROR", code: "60018", message: "Invalid requesttype")])
        }
        if requestTypes == ["TRANSACTIONQUERY"] { return query(fields) }
        guard requestTypes.contains("AUTH") else {
            return SimulatorReply(items: requestTypes.map { Self.item($0, code: "0", message: "Ok") })
        }
        if let field = SimulatorRequestValidator.invalidAuthField(fields) {
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
        var answered = recorded
        if behaviour == .unknownError {
            answered = Self.item("AUTH", code: "99999", message: "Unknown error", extra: [("customeroutput", "RESULT")])
        }
        var delivery: SimulatorReply.Delivery = switch behaviour {
        case .slowAfterRecording: .slow(slowResponseSeconds)
        case .connectionReset: .connectionReset
        case .forgedSignature: .forged
        case .unavailableAfterRecording: .unavailable
        default: .answer
        }
        if delivery == .answer, timeoutRate > 0 || resetRate > 0 {
            // Injected faults (chaos runs): the AUTH is on the ledger, the answer never arrives in time.
            let draw = dice.next()
            if draw < timeoutRate {
                delivery = .slow(slowResponseSeconds)
            } else if draw < timeoutRate + resetRate {
                delivery = .connectionReset
            }
        }
        return SimulatorReply(items: threeD + [answered], delivery: delivery)
    }

    private func authItem(_ fields: JSONValue, amount: Int64, behaviour: SimulatorBehaviour) -> JSONValue {
        let (code, message) = behaviour.recordedCode
        var extra: [(String, JSONValue)] = [
            ("transactionreference", .string(ledger.nextTransactionReference())),
            ("acquirerresponsecode", code == "0" ? "00" : "05"),
            ("settlestatus", .string(behaviour.recordedSettleStatus)),
            ("baseamount", .string(String(amount))),
            ("currencyiso3a", fields["currencyiso3a"] ?? .null),
            ("orderreference", fields["orderreference"] ?? .null),
            ("paymenttypedescription", "VISA"),
            ("livestatus", "0"),
        ]
        if code == "0" { extra.append(("authcode", "SIM42")) }
        if let masked = SimulatorRequestValidator.maskedPan(fields["pan"]?.stringValue) { extra.append(("maskedpan", .string(masked))) }
        extra.append(("customeroutput", "RESULT"))
        return Self.item("AUTH", code: code, message: message, extra: extra)
    }

    private func query(_ fields: JSONValue) -> SimulatorReply {
        guard let reference = fields["filter"]?["orderreference"]?[0]?["value"]?.stringValue,
              fields["filter"]?["sitereference"]?[0]?["value"]?.stringValue != nil else {
            return SimulatorReply(items: [Self.item("TRANSACTIONQUERY", code: "30000", message: "Invalid field", extra: [("errordata", ["filter"])])])
        }
        let records = ledger.records(orderReference: reference)
        return SimulatorReply(items: [Self.item("TRANSACTIONQUERY", code: "0", message: "Ok", extra: [
            ("found", .string(String(records.count))), ("records", .array(records)),
        ])])
    }

    static func item(_ type: String, code: String, message: String, extra: [(String, JSONValue)] = []) -> JSONValue {
        .object([("requesttypedescription", .string(type)), ("errorcode", .string(code)), ("errormessage", .string(message))]
                + extra.map { (key: $0.0, value: $0.1) })
    }
}

import JSON
import PaymentDomain
import Pipeline

/// Trust Payments' form of an operation (trustpayments.md §8): a Webservices request object, to which the transport
/// adds the envelope (`alias`, `version`, `requestreference`). Its operations are TRANSACTIONUPDATEs of the AUTH and
/// REFUNDs of the settled AUTH.
extension GatewayOperation {
    /// The request object (one element of the envelope's `request[]`): a REFUND of the settled AUTH, or else a
    /// TRANSACTIONUPDATE of the AUTH to the settle status and `settlebaseamount` the operation sets
    /// (``GatewayOperation/settlementUpdate``).
    public func requestObject(siteReference: String) -> JSONValue {
        let requestType = OperationProtocol.Transport.RequestNames.trustPayments.name(of: self)
        guard let (settleStatus, settleBaseAmount) = settlementUpdate else {
            guard case .refund(let parent, let amount) = self else { return .null }
            return .object([
                (key: "requesttypedescriptions", value: .array([.string(requestType)])),
                (key: "sitereference", value: .string(siteReference)),
                (key: "parenttransactionreference", value: .string(parent)),
                (key: "baseamount", value: .string(String(amount))),
            ])
        }
        // The filter's shape is TRANSACTIONQUERY's: arrays of {"value": …} (§8, [doc][sdk]).
        let filter: JSONValue = .object([
            (key: "sitereference", value: .array([.object([(key: "value", value: .string(siteReference))])])),
            (key: "transactionreference", value: .array([.object([(key: "value", value: .string(targetReference))])])),
        ])
        let updates = JSONValue.object(omittingAbsent: [
            ("settlestatus", settleStatus.map { .string($0.trustPaymentsValue) }),
            ("settlebaseamount", settleBaseAmount.map { .string(String($0)) }),
        ])
        return .object([
            (key: "requesttypedescriptions", value: .array([.string(requestType)])),
            (key: "filter", value: filter),
            (key: "updates", value: updates),
        ])
    }
}

/// Trust Payments' operations as the rules see them: settle-status updates and REFUNDs, on `/json/` only.
extension OperationProtocol.Transport {
    public static let webservices = OperationProtocol.Transport(name: "Trust Payments", operations: .settlementUpdates, requestNames: .trustPayments)
    public static let jwt = OperationProtocol.Transport(
        name: "Trust Payments",
        operations: .refused(reason: "needs the webservices transport: whether /jwt/ accepts TRANSACTIONUPDATE and REFUND is unconfirmed",
                             lateVoid: "voids need the webservices transport"),
        requestNames: .trustPayments)
}

/// Trust Payments' names of the requests, as stored and reported: every operation but a refund is a TRANSACTIONUPDATE
/// of the AUTH; a refund is a REFUND; the status query a TRANSACTIONQUERY.
extension OperationProtocol.Transport.RequestNames {
    public static let trustPayments = Self(capture: "TRANSACTIONUPDATE", void: "TRANSACTIONUPDATE", lowerCapture: "TRANSACTIONUPDATE",
                                           hold: "TRANSACTIONUPDATE", refund: "REFUND", query: "TRANSACTIONQUERY")
}

/// Trust Payments' `settlestatus` values (trustpayments.md §8, docs/connectors.md cites them): 0 pending settlement,
/// 1 pending (manual override), 2 suspended, 3 cancelled, 10 settling, 100 settled. They are the stored codes
/// (``SettlementState/storedCode``) by construction: its answers' `settlestatus` has always been stored as received
/// (`gateway_attempts.settle_status`) and read back as a stored code, so one table serves both, and
/// `TrustPaymentsSettleStatusTests` pins each of its values to its state.
extension SettlementState {
    public init(trustPayments value: String) { self.init(storedCode: value) }

    public var trustPaymentsValue: String { storedCode }
}

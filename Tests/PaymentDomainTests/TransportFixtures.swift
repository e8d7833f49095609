import PaymentDomain

/// The capabilities the connectors declare for the operation rules (PaymentStages' Connectors/<Name>/), as the domain's
/// tests use them without the connectors.
extension OperationProtocol.Transport {
    static let webservices = Self(name: "Trust Payments", operations: .settlementUpdates)
    static let jwt = Self(name: "Trust Payments", operations: .refused(reason: "needs the webservices transport: whether /jwt/ accepts TRANSACTIONUPDATE and REFUND is unconfirmed",
                                                                       lateVoid: "voids need the webservices transport"))
    static let opp = Self(name: "OPP", operations: .processorOperations, capturedAuthorization: "debit (DB)")
    static let tapPay = Self(name: "TapPay", operations: .processorOperations, capturesPartially: false, voids: false)
}

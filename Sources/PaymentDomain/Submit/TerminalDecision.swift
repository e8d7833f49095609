/// The terminal status, error code and audit detail a final gateway answer gives a payment.
///
/// Why a type: the per-message recording (`SubmitStage.finish(_:with:transaction:)`) and the set-based one
/// (``SubmitRecordStatement``) must write exactly the same columns and audit rows; both read them from here.
public struct TerminalDecision: Sendable, Equatable {
    public let status: PaymentStatus
    public let errorCode: String?
    public let detail: String?

    /// Any answer taken as final: `uncertain` and `transient` ones (an adopted query result) end `failed`.
    public init(_ result: GatewayResult) {
        switch result.outcome {
        case .authorized:
            self.init(status: .authorized, errorCode: nil, detail: result.transactionReference.map { "transaction \($0)" })
        case .declined:
            self.init(status: .declined, errorCode: result.failureCode, detail: result.failureDetail)
        case .needsReview:
            self.init(status: .needsReview, errorCode: result.failureCode, detail: result.failureDetail)
        case .permanentError, .uncertain, .transient:
            self.init(status: .failed, errorCode: result.failureCode, detail: result.failureDetail)
        }
    }

    private init(status: PaymentStatus, errorCode: String?, detail: String?) {
        self.status = status
        self.errorCode = errorCode
        self.detail = detail
    }

    /// Whether a just-sent AUTH's answer ends the payment at once (the others are retried or reconciled).
    public static func endsPayment(_ outcome: GatewayOutcome) -> Bool {
        switch outcome {
        case .authorized, .declined, .permanentError, .needsReview: true
        case .uncertain, .transient: false
        }
    }
}

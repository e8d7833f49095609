// What a connector answers submit: an AUTH's answer (`GatewayResult`, its `GatewayOutcome`) and a status query's
// (`TransactionQueryResult`, which adopts a found AUTH's `GatewayResult`).

/// The facts of one gateway answer that the pipeline records (`gateway_attempts`), never card data: the PAN only
/// appears masked, as the gateway returns it.
public struct GatewayResult: Sendable, Equatable {
    public var outcome: GatewayOutcome
    /// The gateway's `errorcode`, or a local `paypipe.*` code when no trustworthy answer was received.
    public var errorCode: String?
    public var errorMessage: String?
    /// `errordata` (for 30000: the name of the bad field).
    public var errorData: [String]
    public var transactionReference: String?
    public var settleStatus: String?
    public var acquirerResponseCode: String?
    public var authCode: String?
    public var maskedPan: String?
    /// Why the outcome differs from what the code alone says (e.g. `3ds_challenge_required`).
    public var reason: String?
    /// The processor's settlement due date of an AUTH, where it gives one (``SettlementSchedule/dueDate(_:)``): when settlement is first queried.
    public var settleDueDate: String?
    /// What a storing (customer-initiated) payment's answer names for later merchant-initiated ones, under the
    /// connector's own names (``CredentialSecrets/references``); empty when the answer carries none. Sealed when stored.
    public var credentialReferences: [String: String] = [:]

    public init(
        outcome: GatewayOutcome, errorCode: String? = nil, errorMessage: String? = nil, errorData: [String] = [],
        transactionReference: String? = nil, settleStatus: String? = nil, acquirerResponseCode: String? = nil,
        authCode: String? = nil, maskedPan: String? = nil, reason: String? = nil
    ) {
        self.outcome = outcome
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.errorData = errorData
        self.transactionReference = transactionReference
        self.settleStatus = settleStatus
        self.acquirerResponseCode = acquirerResponseCode
        self.authCode = authCode
        self.maskedPan = maskedPan
        self.reason = reason
    }

    /// A local failure (no trustworthy gateway answer): `code` is a `paypipe.*` code.
    public static func local(_ outcome: GatewayOutcome, code: String, message: String) -> GatewayResult {
        GatewayResult(outcome: outcome, errorCode: code, errorMessage: message)
    }

    /// `gateway_attempts.outcome` of an AUTH attempt: the reason when the outcome differs from what the code says.
    public var recordedOutcome: String { reason ?? outcome.rawValue }
    /// `gateway_attempts.error_message`: the gateway's message, capped (it is free text from outside).
    public var recordedErrorMessage: String? { errorMessage.map { String($0.prefix(500)) } }

    /// Error code and message for the payment's audit trail and `error_code` column.
    public var failureCode: String { reason ?? "gateway_\(errorCode ?? "unknown")" }
    public var failureDetail: String {
        let data = errorData.isEmpty ? "" : " (\(errorData.joined(separator: ", ")))"
        return "gateway \(errorCode ?? "-"): \(errorMessage ?? "no message")\(data)"
    }
}

/// What one gateway answer (or the failure to get one) means for the payment.
///
/// The raw value is stored in `gateway_attempts.outcome`.
public enum GatewayOutcome: String, Sendable, CaseIterable {
    /// Error code 0: the acquirer authorised the payment.
    case authorized
    /// The issuer (or 3-D Secure) refused: final, never retried.
    case declined
    /// The request itself is wrong (field, JWT, configuration): final, retrying cannot help.
    case permanentError = "permanent_error"
    /// The gateway may or may not have processed the request: query before any resend.
    case uncertain
    /// Known not to have been processed (refused before sending, record locked, generic retry): safe to resend.
    case transient
    /// The gateway asks for manual investigation (60034): an operator decides.
    case needsReview = "needs_review"
}

/// What a processor's status query for one payment's reference established (each connector maps its own answer).
public enum TransactionQueryResult: Sendable, Equatable {
    /// The gateway holds an AUTH for the order: its result is adopted as the payment's outcome.
    case found(GatewayResult)
    /// The gateway confirms it has no transaction for the order: the AUTH may be sent again.
    case notFound
    /// No usable answer (transport failure, bad signature, query error, or a record whose outcome is itself
    /// uncertain): ask again later, and give up to manual review after a bounded number of tries.
    case inconclusive(code: String, reason: String)

    /// What a payment's own authorisation record must match to be adopted: its amount in minor units, its currency and
    /// the reference queried (a record naming another one is not this payment's). Each connector compares its
    /// record's own fields with it; nil compares nothing.
    public struct Expected: Sendable, Equatable {
        public let amountMinor: Int64?
        public let currency: String?
        public let orderReference: String?

        public init(amountMinor: Int64?, currency: String?, orderReference: String? = nil) {
            self.amountMinor = amountMinor
            self.currency = currency
            self.orderReference = orderReference
        }
    }
}

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

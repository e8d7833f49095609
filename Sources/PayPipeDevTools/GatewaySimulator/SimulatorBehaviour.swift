/// What the simulator does with an AUTH, chosen deterministically by the last two digits of `baseamount` so tests
/// and benchmarks can pick a path without configuration (documented in docs/submit.md).
public enum SimulatorBehaviour: Sendable, Equatable {
    /// Authorise (errorcode 0).
    case authorize
    /// `…51`: issuer decline (70000); the AUTH is recorded as declined.
    case decline
    /// `…99`: the acquirer authorised and the AUTH is recorded, but the answer says 99999 (uncertain).
    case unknownError
    /// `…98`: the AUTH is recorded (authorised), then the answer is delayed beyond the client's timeout.
    case slowAfterRecording
    /// `…97`: HTTP 500 before anything is recorded.
    case serverError
    /// `…96`: the AUTH is recorded (authorised), then the connection is dropped without an answer.
    case connectionReset
    /// `…95`: 3-D Secure challenge required (THREEDQUERY answers `customeroutput: THREEDREDIRECT`); no AUTH.
    case challenge
    /// `…94`: 60034 manual investigation required; the AUTH is recorded with that code.
    case manualReview
    /// `…93`: 79001 record temporarily locked; nothing recorded.
    case locked
    /// `…92`: the AUTH is recorded (authorised) but the answer is signed with a wrong key.
    case forgedSignature
    /// `…91`: refused as 30000 Invalid field naming `sitereference` (a configuration error); nothing recorded.
    case invalidField
    /// `…90`: errorcode 0 but `settlestatus` 3 (cancelled, e.g. by the merchant's fraud rules): recorded, not authorised.
    case cancelled
    /// `…89`: errorcode 0 with `settlestatus` 2 (authorised but suspended): recorded.
    case suspended
    /// `…88`: the AUTH is recorded (authorised), then a proxy in front of the gateway answers HTTP 503.
    case unavailableAfterRecording

    public static func forAmount(_ baseAmount: Int64) -> SimulatorBehaviour {
        switch baseAmount % 100 {
        case 51: .decline
        case 99: .unknownError
        case 98: .slowAfterRecording
        case 97: .serverError
        case 96: .connectionReset
        case 95: .challenge
        case 94: .manualReview
        case 93: .locked
        case 92: .forgedSignature
        case 91: .invalidField
        case 90: .cancelled
        case 89: .suspended
        case 88: .unavailableAfterRecording
        default: .authorize
        }
    }

    /// Whether the gateway keeps a record of the AUTH (what TRANSACTIONQUERY later finds).
    public var recordsAuth: Bool {
        switch self {
        case .authorize, .decline, .unknownError, .slowAfterRecording, .connectionReset, .manualReview, .forgedSignature,
             .cancelled, .suspended, .unavailableAfterRecording: true
        case .serverError, .challenge, .locked, .invalidField: false
        }
    }

    /// The `settlestatus` of the recorded AUTH: 0 (pending settlement) when authorised, 3 (cancelled) otherwise.
    var recordedSettleStatus: String {
        switch self {
        case .suspended: "2"
        case .cancelled: "3"
        default: recordedCode.code == "0" ? "0" : "3"
        }
    }

    /// The error code and message of the recorded AUTH (what a query returns).
    var recordedCode: (code: String, message: String) {
        switch self {
        case .decline: ("70000", "Decline")
        case .manualReview: ("60034", "Manual investigation required")
        default: ("0", "Ok")
        }
    }
}

import ApplePay

/// Failures of `paypipe token`, each with the exit status and the `{"error":{…}}` code it reports.
enum TokenCommandError: Error {
    /// Bad command line (exit 64, EX_USAGE).
    case usage(String)
    /// A file could not be read or written (exit 66, EX_NOINPUT).
    case file(String)
    /// Merchant identities, trust root or sandbox PKI unusable (exit 78, EX_CONFIG).
    case configuration(code: String, message: String)
    /// The token was rejected (exit 65, EX_DATAERR).
    case token(ApplePayError)

    var exitStatus: Int32 {
        switch self {
        case .usage: 64
        case .file: 66
        case .configuration: 78
        case .token: 65
        }
    }

    var code: String {
        switch self {
        case .usage: "usage"
        case .file: "file_unreadable"
        case .configuration(let code, _): code
        case .token(let error): error.code
        }
    }

    var message: String {
        switch self {
        case .usage(let message), .file(let message), .configuration(_, let message): message
        case .token(let error): error.message
        }
    }
}

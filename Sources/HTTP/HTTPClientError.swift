/// Why `HTTPClient.send` produced no response.
///
/// The cases are shaped around the one question a payment pipeline must answer after a failure: *could the server
/// have received (and acted on) the request?* `requestMayHaveBeenSent == false` means retrying cannot duplicate the
/// operation; `true` means the outcome is unknown and must be queried (the processor's status query) before any resend.
public enum HTTPClientError: Error, Sendable, CustomStringConvertible {
    /// The request was rejected locally (bad method, URL or header); nothing was sent.
    case invalidRequest(String)
    /// DNS resolution or the TCP connection failed; nothing was sent.
    case couldNotConnect(String)
    /// The connect or total timeout expired. `afterSending` says whether request bytes had been written.
    case timedOut(afterSending: Bool)
    /// The connection broke (reset, closed without a response, truncated response).
    case connectionReset(afterSending: Bool)
    /// TLS set-up failed (certificate verification, handshake); nothing was sent.
    case tls(String)
    /// The response body exceeded `HTTPClientConfiguration.maxResponseBytes`. The request had been sent.
    case tooLarge
    /// The request's `HTTPSendGate` refused it once connected, before any request byte was written.
    case refusedBeforeSending(String)
    /// Any other libcurl failure (`code` is the CURLcode). Treated as possibly sent.
    case other(code: Int, message: String)

    /// Whether the server may have received the request. Unknown failures answer `true`: for payments, assuming
    /// "not sent" wrongly risks a double charge, while assuming "sent" wrongly only costs a status query.
    public var requestMayHaveBeenSent: Bool {
        switch self {
        case .invalidRequest, .couldNotConnect, .tls, .refusedBeforeSending:
            return false
        case .timedOut(let afterSending), .connectionReset(let afterSending):
            return afterSending
        case .tooLarge, .other:
            return true
        }
    }

    /// Built from libcurl's messages, which name hosts and reasons but never headers or bodies.
    public var description: String {
        switch self {
        case .invalidRequest(let reason):
            return "invalid HTTP request: \(reason)"
        case .couldNotConnect(let reason):
            return "could not connect (request not sent): \(reason)"
        case .timedOut(let afterSending):
            return afterSending
                ? "timed out after sending the request (outcome unknown)"
                : "timed out before the request was sent"
        case .connectionReset(let afterSending):
            return afterSending
                ? "connection lost after sending the request (outcome unknown)"
                : "connection lost before the request was sent"
        case .tls(let reason):
            return "TLS failure (request not sent): \(reason)"
        case .refusedBeforeSending(let reason):
            return "refused before sending (request not sent): \(reason)"
        case .tooLarge:
            return "response body exceeds the configured limit"
        case .other(let code, let message):
            return "HTTP transfer failed (curl code \(code)): \(message)"
        }
    }
}

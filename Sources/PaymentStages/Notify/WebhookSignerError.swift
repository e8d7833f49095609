/// Why a webhook secret or signature was refused. Descriptions never contain the secret itself.
public enum WebhookSignerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not `whsec_<base64>`, or its key is empty. `index` is the position in the merchant's secret list.
    case invalidSecret(index: Int)
    /// The merchant has no webhook secret configured.
    case noSecret
    case missingHeader(String)
    case invalidTimestamp
    case timestampTooOld
    case timestampTooNew
    /// No `v1` entry of `webhook-signature` matched.
    case noMatchingSignature

    public var description: String {
        switch self {
        case .invalidSecret(let index): "webhook secret #\(index) is not of the form whsec_<base64>"
        case .noSecret: "no webhook secret configured"
        case .missingHeader(let name): "missing header \(name)"
        case .invalidTimestamp: "webhook-timestamp is not an integer"
        case .timestampTooOld: "webhook-timestamp is too old"
        case .timestampTooNew: "webhook-timestamp is too far in the future"
        case .noMatchingSignature: "no matching v1 signature"
        }
    }
}

/// Why the authorize stage cannot build a gateway request for a payment.
///
/// Every case is permanent: retrying cannot fix a missing configuration or inconsistent payment data, so the
/// payment ends `failed` with ``code`` and the merchant is notified. Descriptions name the field that is wrong but
/// never echo card data, cryptograms or secrets, because they are stored as the payment's `error_message` and logged.
public enum AuthorizeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No gateway configuration, an unsupported gateway type, or an empty site reference, JWT username or secret.
    case merchantNotConfigured(String)
    /// The merchant's request types are not one of the sequences its connector supports (`supported`, as the
    /// connector declares them).
    case invalidRequestTypes([String], supported: [[String]])
    /// Not an ISO 4217 alpha-3 code PayPipe knows, or not the currency the token was issued for.
    case invalidCurrency(String)
    /// Missing, not positive, too large for `baseamount`, or not the amount the token was issued for.
    case invalidAmount(String)
    /// The stored card data (or wallet token) the merchant's mode needs is absent or already purged.
    case cardDataMissing(String)
    /// The stored card data is present but unusable (PAN or expiry date malformed).
    case invalidCardData(String)

    /// Stable machine-readable code, stored in `payments.error_code` and sent to the merchant.
    public var code: String {
        switch self {
        case .merchantNotConfigured: "merchant_not_configured"
        case .invalidRequestTypes: "invalid_request_types"
        case .invalidCurrency: "invalid_currency"
        case .invalidAmount: "invalid_amount"
        case .cardDataMissing: "card_data_missing"
        case .invalidCardData: "invalid_card_data"
        }
    }

    /// Human-readable reason (no card data, no secrets).
    public var reason: String {
        switch self {
        case .merchantNotConfigured(let reason), .invalidCurrency(let reason), .invalidAmount(let reason),
            .cardDataMissing(let reason), .invalidCardData(let reason):
            reason
        case .invalidRequestTypes(let types, let supported):
            "request types \(types) are not supported; use \(supported.map { "\($0)" }.joined(separator: " or "))"
        }
    }

    public var description: String { "\(code): \(reason)" }
}

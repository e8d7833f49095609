import Pipeline

/// TapPay's `status` codes mapped onto ``GatewayOutcome``, each with its source (other-gateways.md §1 [doc]:
/// docs.sit.tappaysdk.com/tutorial/en/error.html and docs.tappaysdk.com/tutorial/en/error.html). Every code not
/// listed is uncertain: reconciled through the Record API before anything else. Pure.
public enum TapPayStatus {
    public struct Entry: Sendable, Equatable {
        public let outcome: GatewayOutcome
        /// The payment's failure code when it differs from `gateway_<status>`.
        public let reason: String?
        public let meaning: String
    }

    public static let table: [Int: Entry] = {
        var table: [Int: Entry] = [
            0: Entry(outcome: .authorized, reason: nil, meaning: "Success"),
            // Single use and 90 s of life: no resend can succeed.
            91: Entry(outcome: .permanentError, reason: "prime_expired", meaning: "Expired prime"),
            121: Entry(outcome: .permanentError, reason: nil, meaning: "Invalid arguments: prime"),
            // TapPay advises querying the Record API rather than trusting a lost answer: query, never resend.
            421: Entry(outcome: .uncertain, reason: nil, meaning: "Gateway Timeout"),
            422: Entry(outcome: .uncertain, reason: nil, meaning: "Authorization Timeout"),
            // Merchant, partner and configuration errors: the request was refused as a whole.
            4: Entry(outcome: .permanentError, reason: nil, meaning: "IP mismatch"),
            5: Entry(outcome: .permanentError, reason: nil, meaning: "Wrong JSON format"),
            41: Entry(outcome: .permanentError, reason: nil, meaning: "Wrong card format"),
            61: Entry(outcome: .permanentError, reason: nil, meaning: "Merchant not found"),
            67: Entry(outcome: .permanentError, reason: nil, meaning: "Merchant does not support this payment method"),
            74: Entry(outcome: .permanentError, reason: nil, meaning: "does not support 3DS2.0"),
            75: Entry(outcome: .permanentError, reason: nil, meaning: "does not support non-3D secure"),
            80: Entry(outcome: .permanentError, reason: nil, meaning: "Invalid x-api-key or app key"),
            81: Entry(outcome: .permanentError, reason: nil, meaning: "Partner not found"),
            84: Entry(outcome: .permanentError, reason: nil, meaning: "Partner unauthorized"),
            89: Entry(outcome: .permanentError, reason: nil, meaning: "currency not supported"),
            510: Entry(outcome: .permanentError, reason: nil, meaning: "invalid amount"),
            512: Entry(outcome: .permanentError, reason: nil, meaning: "Invalid arguments: delay_capture_in_days"),
            514: Entry(outcome: .permanentError, reason: nil, meaning: "Out of range: delay_capture_in_days"),
            515: Entry(outcome: .permanentError, reason: nil, meaning: "Out of range: details"),
        ]
        // 501-509: missing arguments (cardholder, merchant_id, prime, currency, details, partner_key, phone_number, name, email).
        for code in 501...509 { table[code] = Entry(outcome: .permanentError, reason: nil, meaning: "missing argument") }
        return table
    }()

    /// The outcome and reason of `status`. Bank declines carry no documented status of their own [UNCONFIRMED]: any
    /// other non-zero status stays uncertain (queried, so a decline is read from the record, never guessed).
    public static func outcome(_ status: Int) -> (outcome: GatewayOutcome, reason: String?) {
        guard let entry = table[status] else { return (.uncertain, nil) }
        return (entry.outcome, entry.reason)
    }
}

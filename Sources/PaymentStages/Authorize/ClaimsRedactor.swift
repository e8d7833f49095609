import JWT

/// Masks card data in Trust Payments claims (or any JSON holding them) for display: logs, descriptions and
/// `paypipe jwt decode` without `--reveal`.
///
/// Works on keys wherever they appear, so request claims, a decoded `/jwt/` envelope and a nested request object
/// are all covered. What is kept is what support needs to recognise a payment: the PAN's last four digits and the
/// length of opaque values.
public enum ClaimsRedactor {
    /// Keys whose values are card data or bearer material. `jwt` (a response's next request JWT) and
    /// `threedresponse` embed signed claims, so they are hidden too. The OPP and TapPay connectors' stored requests
    /// (docs/connectors.md) hold the DPAN, expiry, cryptogram, Apple's token or the TapPay prime under their own names.
    public static let sensitiveKeys: Set<String> = [
        "pan", "tavv", "wallettoken", "expirydate", "securitycode", "cavv", "jwt", "threedresponse",
        "card.number", "card.expirymonth", "card.expiryyear", "threedsecure.verificationid", "applepay.paymenttoken", "prime", "partner_key",
    ]

    public static func masked(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            return .object(members.map { member in
                (key: member.key, value: sensitiveKeys.contains(member.key.lowercased()) ? mask(member.key.lowercased(), member.value) : masked(member.value))
            })
        case .array(let elements):
            return .array(elements.map(masked))
        default:
            return value
        }
    }

    /// One sensitive value: a PAN keeps its last four digits, an expiry date its shape, anything else only its length.
    static func mask(_ key: String, _ value: JSONValue) -> JSONValue {
        guard case .string(let text) = value else { return value.isNull ? value : .string("***") }
        switch key {
        case "pan" where text.count > 4, "card.number" where text.count > 4:
            return .string(String(repeating: "*", count: text.count - 4) + text.suffix(4))
        case "expirydate":
            return .string("**/****")
        default:
            return .string("*** (\(text.utf8.count) bytes)")
        }
    }
}

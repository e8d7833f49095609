import JWT

/// Masks card data in stored requests and processor messages (or any JSON holding them) for display: logs, descriptions and
/// `paypipe jwt decode` without `--reveal`.
///
/// Works on keys wherever they appear, so request claims, a decoded `/jwt/` envelope and a nested request object
/// are all covered. What is kept is what support needs to recognise a payment: the PAN's last four digits and the
/// length of opaque values.
public enum ClaimsRedactor {
    /// Keys whose values are card data or bearer material: every connector's (``ConnectorRegistry/sensitiveKeys``), each
    /// holding the DPAN, expiry, cryptogram, Apple's token or a processor's one-time credential under its own names.
    public static let sensitiveKeys: Set<String> = ConnectorRegistry.sensitiveKeys

    /// The keys holding a PAN, shown with its last four digits.
    static let panKeys: Set<String> = ConnectorRegistry.panKeys

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
        if panKeys.contains(key), text.count > 4 {
            return .string(String(repeating: "*", count: text.count - 4) + text.suffix(4))
        }
        if key == "expirydate" { return .string("**/****") }
        return .string("*** (\(text.utf8.count) bytes)")
    }
}

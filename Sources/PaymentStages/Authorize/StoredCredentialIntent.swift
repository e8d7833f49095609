import Pipeline

/// What a payment asks of its connector about stored credentials (issue #44), in neutral terms; each connector's
/// folder maps it to its processor's fields (`<Name>StoredCredentials.swift`, docs/recurring.md "Per connector").
public enum StoredCredentialIntent: Sendable, Equatable, CustomStringConvertible {
    /// A customer-initiated payment (CIT) that stores its credential for `usage`.
    case store(CredentialUsage)
    /// A merchant-initiated payment (MIT) charging a stored credential: its reason, the usage the credential was stored
    /// for, and the processor's references sealed with it (``CredentialSecrets/references``). No card data goes along.
    case charge(MITReason, usage: CredentialUsage, references: [String: String])

    /// The references are secret (they can charge the card): only their names are shown.
    public var description: String {
        switch self {
        case .store(let usage): "store(\(usage.rawValue))"
        case .charge(let reason, let usage, let references):
            "charge(\(reason.rawValue), usage: \(usage.rawValue), references: \(references.keys.sorted()))"
        }
    }
}

import Foundation

/// What a connector declares about stored credentials (its plug-in's `storedCredentials`, data in its folder):
/// the usages it can store and the MIT reasons it has processor codes for. A connector without it stores nothing.
public struct StoredCredentialSupport: Sendable, Equatable {
    public let usages: Set<CredentialUsage>
    public let mitReasons: Set<MITReason>
    /// Whether later MITs need the network token itself (sealed, kept only while the credential is active).
    public let needsNetworkToken: Bool

    public init(usages: Set<CredentialUsage>, mitReasons: Set<MITReason>, needsNetworkToken: Bool) {
        self.usages = usages
        self.mitReasons = mitReasons
        self.needsNetworkToken = needsNetworkToken
    }
}

/// The checks of issue #44 made before any gateway call, pure: a storing job (CIT) and a merchant-initiated job (MIT)
/// against the connector's ``StoredCredentialSupport`` and the stored credential. Each refusal is a documented code
/// (FailureCatalogue) and never reaches a processor.
public enum CredentialCheck {
    /// The part of a stored credential the checks read.
    public struct Stored: Sendable, Equatable {
        public let merchantId: String
        public let connector: String
        public let usage: CredentialUsage
        public let state: CredentialState
        public let expiry: CardExpiry?

        public init(merchantId: String, connector: String, usage: CredentialUsage, state: CredentialState, expiry: CardExpiry?) {
            (self.merchantId, self.connector, self.usage, self.state, self.expiry) = (merchantId, connector, usage, state, expiry)
        }
    }

    /// A CIT asking to store a credential for `usage` through `connector`.
    public static func store(_ usage: CredentialUsage, connector: String, support: StoredCredentialSupport?) -> Rejection? {
        guard let support else {
            return Rejection(code: "credential_not_supported", reason: "connector \(connector) cannot store credentials")
        }
        guard support.usages.contains(usage) else {
            return Rejection(code: "credential_not_supported", reason: "connector \(connector) cannot store a credential for \(usage.rawValue) use")
        }
        return nil
    }

    /// An MIT of `merchantId` charging `credentialId` (found as `stored`, nil when no row has that id) for `reason`
    /// through the merchant's `connector`, at `now`. The order matters: a connector without the capability is refused
    /// before any lookup; another merchant's credential reads exactly as a missing one.
    public static func charge(
        merchantId: String, credentialId: String, reason: MITReason, stored: Stored?, connector: String,
        support: StoredCredentialSupport?, now: Date
    ) -> Rejection? {
        guard let support else {
            return Rejection(code: "credential_not_supported", reason: "connector \(connector) cannot charge stored credentials")
        }
        guard let stored, stored.merchantId == merchantId else {
            return Rejection(code: "credential_unknown", reason: "credential \(credentialId) is not one of merchant \(merchantId)'s")
        }
        guard stored.connector == connector else {
            return Rejection(code: "credential_not_supported",
                             reason: "credential \(credentialId) was stored through \(stored.connector), the merchant now uses \(connector)")
        }
        switch stored.state {
        case .unlinked: return Rejection(code: "credential_unlinked", reason: "credential \(credentialId) was unlinked")
        case .expired: return Rejection(code: "credential_expired", reason: "credential \(credentialId) has expired")
        case .active: break
        }
        if let expiry = stored.expiry, expiry.isExpired(at: now) {
            return Rejection(code: "credential_expired", reason: "credential \(credentialId) expired after \(expiry)")
        }
        if let required = reason.requiredUsage, required != stored.usage {
            return Rejection(code: "credential_usage_mismatch",
                             reason: "mitReason \(reason.rawValue) needs a credential stored for \(required.rawValue) use; \(credentialId) was stored for \(stored.usage.rawValue)")
        }
        guard support.mitReasons.contains(reason) else {
            return Rejection(code: "credential_not_supported", reason: "connector \(connector) has no processor code for mitReason \(reason.rawValue)")
        }
        return nil
    }
}

import Crypto
import Foundation

/// What kind of network token paid (docs/recurring.md): Apple's merchant token (MPAN), a device token (DPAN), or not
/// known (a processor that decrypts the token itself and does not say).
public enum TokenType: String, Sendable, Hashable, CaseIterable, Codable {
    case merchant, device, unknown

    /// The rule we implement: an Apple Pay payment is an MPAN payment exactly when its decrypted data carries
    /// `merchantTokenIdentifier` (Apple documents the key only "for a merchant token request"; docs/recurring.md).
    public static func fromDecrypted(merchantTokenIdentifier: String?) -> TokenType {
        merchantTokenIdentifier.map { $0.isEmpty ? .device : .merchant } ?? .device
    }
}

/// What a stored credential may be used for: the job's `storeCredential.usage`.
public enum CredentialUsage: String, Sendable, Hashable, CaseIterable, Codable {
    case recurring, unscheduled, installment
}

/// Why a merchant charges a stored credential without the customer (the job's `mitReason`), in the names the
/// processors' documents use; each connector maps it to its own codes in its folder.
public enum MITReason: String, Sendable, Hashable, CaseIterable, Codable {
    case recurring, unscheduled, installment, reauthorization, resubmission
    case delayedCharge = "delayed_charge"

    /// The stored usage this reason needs: a standing instruction (recurring, installment, unscheduled) charges only
    /// a credential stored for it; the industry-practice reasons (reauthorization, resubmission, delayed charge)
    /// follow an earlier payment and fit any usage (our rule, docs/recurring.md).
    public var requiredUsage: CredentialUsage? {
        switch self {
        case .recurring: .recurring
        case .installment: .installment
        case .unscheduled: .unscheduled
        case .reauthorization, .resubmission, .delayedCharge: nil
        }
    }
}

/// A stored credential's state. Only `active` credentials pay; the others are final.
public enum CredentialState: String, Sendable, Hashable, CaseIterable, Codable {
    case active, unlinked, expired
}

/// A stored credential's public id: `cred_` and 24 lowercase hexadecimal digits (96 random bits).
public enum CredentialID {
    public static let prefix = "cred_"

    public static func generate() -> String {
        prefix + SecureRandom.bytes(count: 12).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    public static func isValid(_ text: String) -> Bool {
        text.hasPrefix(prefix) && text.utf8.count == prefix.utf8.count + 24
            && text.utf8.dropFirst(prefix.utf8.count).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// A card or token expiry (month precision), written `YYYY-MM` in PayPipe's events and CLI.
public struct CardExpiry: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let year: Int
    public let month: Int

    public init?(year: Int, month: Int) {
        guard (2000...2999).contains(year), (1...12).contains(month) else { return nil }
        self.year = year
        self.month = month
    }

    /// `YYYY-MM`.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 4, parts[1].count == 2, let year = Int(parts[0]), let month = Int(parts[1]) else { return nil }
        self.init(year: year, month: month)
    }

    /// The decrypted token's `applicationExpirationDate`, `YYMMDD`.
    public init?(applicationExpirationDate text: String) {
        guard text.utf8.count == 6, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let year = Int(text.prefix(2)), let month = Int(text.dropFirst(2).prefix(2)) else { return nil }
        self.init(year: 2000 + year, month: month)
    }

    /// Apple's `cardMetadata.expirationDate`, which "can be MMYYYY or DDMMYYYY" [secondary: Apple DTS, forums thread 780506].
    public init?(cardMetadataExpirationDate text: String) {
        guard text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        let monthYear: Substring
        switch text.count {
        case 6: monthYear = Substring(text)
        case 8: monthYear = text.dropFirst(2)
        default: return nil
        }
        guard let month = Int(monthYear.prefix(2)), let year = Int(monthYear.dropFirst(2)) else { return nil }
        self.init(year: year, month: month)
    }

    public var description: String { "\(year)-\(month < 10 ? "0" : "")\(month)" }

    /// Whether a card valid through this month is expired at `date` (UTC): after the month's last day.
    public func isExpired(at date: Date) -> Bool {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let now = calendar.dateComponents([.year, .month], from: date)
        guard let year = now.year, let month = now.month else { return false }
        return (year, month) > (self.year, self.month)
    }

    public static func < (lhs: CardExpiry, rhs: CardExpiry) -> Bool { (lhs.year, lhs.month) < (rhs.year, rhs.month) }
}

/// The secret half of a stored credential, sealed at rest (``CredentialStore``, AAD = credential id): what the
/// processor needs for later merchant-initiated payments. Never a PAN; its description shows only what is set.
public struct CredentialSecrets: Codable, Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The connector's references by its own names (e.g. a parent transaction reference, a registration id and an
    /// initial transaction id), chosen in the connector's folder.
    public var references: [String: String]
    /// A network token (an MPAN with its expiry, never a cryptogram), for processors that need it for later MITs;
    /// kept only while the credential is active.
    public var networkToken: NetworkToken?

    public struct NetworkToken: Codable, Sendable, Equatable {
        public var number: String
        /// `YYYY-MM`.
        public var expiry: String

        public init(number: String, expiry: String) {
            self.number = number
            self.expiry = expiry
        }
    }

    public init(references: [String: String], networkToken: NetworkToken? = nil) {
        self.references = references
        self.networkToken = networkToken
    }

    public var description: String {
        "CredentialSecrets(references: \(references.keys.sorted()), networkToken: \(networkToken == nil ? "unset" : "set"))"
    }

    public var customMirror: Mirror { Mirror(reflecting: description) }
}

/// What a payment records about the token that paid: its type and, for a merchant token, Apple's
/// `merchantTokenIdentifier` and `merchantTokenMetadata` (as JSON text). No card number, no cryptogram.
public struct TokenFacts: Sendable, Equatable {
    public var type: TokenType
    public var merchantTokenIdentifier: String?
    /// `merchantTokenMetadata` serialised as JSON (card art and card metadata).
    public var merchantTokenMetadata: String?

    public init(type: TokenType, merchantTokenIdentifier: String? = nil, merchantTokenMetadata: String? = nil) {
        self.type = type
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.merchantTokenMetadata = merchantTokenMetadata
    }
}

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

/// The stored-credential checks (docs/recurring.md) made before any gateway call, pure: a storing job (CIT) and a
/// merchant-initiated job (MIT) against the connector's ``StoredCredentialSupport`` and the stored credential. Each
/// refusal is a documented code (FailureCatalogue) and never reaches a processor.
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

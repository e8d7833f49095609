import Crypto
import Foundation

/// The certificates a merchant's configuration holds, with their expiry, and the rule for warning about them
/// (pure: `paypipe merchant certs`, the decrypt worker's `certificate_expiring` log and expiry metric share it).
///
/// Apple's payment-processing and merchant-identity certificates are valid 25 months (TN3206); activating a new
/// processing certificate takes effect at once, so a new identity must be in the merchant document first.
public struct CertificateExpiry: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// An `identities[]` entry: decrypts tokens naming its `publicKeyHash`.
        case paymentProcessing = "payment_processing"
        /// `merchantIdentityCertificateFile`: tracked for expiry only.
        case merchantIdentity = "merchant_identity"
    }

    public let merchantId: String
    public let kind: Kind
    /// base64 SHA-256 of the SubjectPublicKeyInfo (payment processing only).
    public let publicKeyHash: String?
    public let notAfter: Date

    /// Days before expiry at which `certificate_expiring` is logged (once a day per certificate from the first on).
    public static let warningDays = [30, 15, 7]

    public init(merchantId: String, kind: Kind, publicKeyHash: String?, notAfter: Date) {
        self.merchantId = merchantId
        self.kind = kind
        self.publicKeyHash = publicKeyHash
        self.notAfter = notAfter
    }

    /// Every certificate of one merchant. `notAfter` as recorded at apply; for identities applied before it was
    /// recorded, read from the stored certificate (one whose PEM does not parse is left out).
    public static func certificates(of merchantId: String, config: MerchantConfig) -> [CertificateExpiry] {
        var result: [CertificateExpiry] = []
        for identity in config.identities {
            guard let notAfter = identity.notAfter.flatMap(date(iso8601:)) ?? pemNotAfter(identity.certificatePem) else { continue }
            result.append(CertificateExpiry(merchantId: merchantId, kind: .paymentProcessing, publicKeyHash: identity.publicKeyHash, notAfter: notAfter))
        }
        if let identity = config.merchantIdentityCertificate, let notAfter = date(iso8601: identity.notAfter) {
            result.append(CertificateExpiry(merchantId: merchantId, kind: .merchantIdentity, publicKeyHash: nil, notAfter: notAfter))
        }
        return result
    }

    /// Whole days left (negative once expired), rounded down.
    public func daysLeft(at now: Date) -> Int {
        Int((notAfter.timeIntervalSince(now) / 86_400).rounded(.down))
    }

    /// The tightest warning threshold (30, 15 or 7) the certificate is within, `nil` above 30 days.
    public func warningThreshold(at now: Date) -> Int? {
        let left = daysLeft(at: now)
        return Self.warningDays.filter { left <= $0 }.min()
    }

    /// A key naming this certificate in logs and in the once-a-day bookkeeping.
    public var identity: String { [merchantId, kind.rawValue, publicKeyHash ?? ""].joined(separator: "/") }

    public static func iso8601(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    static func date(iso8601 text: String) -> Date? {
        ISO8601DateFormatter().date(from: text)
    }

    static func pemNotAfter(_ pem: String) -> Date? {
        (try? Certificate.certificates(pem: pem))?.first?.notAfter.date
    }
}

/// When to log `certificate_expiring`: at most once a day per certificate, from 30 days before expiry on.
public struct CertificateWarningSchedule: Sendable {
    private var lastWarned: [String: Date] = [:]

    public init() {}

    /// The threshold to log now, recording it; `nil` when the certificate is not within 30 days or was warned about
    /// less than a day ago.
    public mutating func due(_ certificate: CertificateExpiry, at now: Date) -> Int? {
        guard let threshold = certificate.warningThreshold(at: now) else { return nil }
        if let last = lastWarned[certificate.identity], now.timeIntervalSince(last) < 86_400 { return nil }
        lastWarned[certificate.identity] = now
        return threshold
    }
}

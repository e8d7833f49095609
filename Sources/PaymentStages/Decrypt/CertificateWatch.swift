import Foundation
import Pipeline
import Postgres
import Synchronization

/// The decrypt worker's view of every merchant certificate: `paypipe_certificate_not_after_seconds{merchant,kind,
/// public_key_hash}` (Unix time of expiry) for each, and a `certificate_expiring` warning once a day per certificate
/// from 30 days before expiry (threshold 30, 15 or 7 in the log line). Refreshed by the worker's upkeep from the
/// merchants' stored configuration (no secrets read).
public final class CertificateWatch: Sendable {
    public static let metric = "paypipe_certificate_not_after_seconds"

    private let schedule = Mutex(CertificateWarningSchedule())
    private let metrics = AttachedMetrics()

    public init() {}

    public func attach(metrics registry: MetricsRegistry) {
        metrics.attach(registry) { $0.register(Self.metric, kind: .gauge, help: "Expiry (Unix time) of each merchant certificate, by merchant, kind and publicKeyHash.") }
    }

    /// Reads every merchant's certificates, republishes the gauge (certificates no longer configured disappear) and
    /// logs the warnings that are due. Returns the certificates seen.
    @discardableResult
    public func check(on connection: PostgresConnection, logger: Logger, now: Date = Date()) throws -> [CertificateExpiry] {
        let configs = try MerchantStore.listConfigs(on: connection) { id, error in
            logger.warning("merchant_config_unreadable", [("merchantId", .string(id)), ("error", .string(String(describing: error)))])
        }
        let certificates = configs.flatMap { CertificateExpiry.certificates(of: $0.id, config: $0.config) }
        metrics.report { registry in
            registry.replace(Self.metric, with: Dictionary(certificates.map { certificate in
                (Self.labels(certificate), certificate.notAfter.timeIntervalSince1970)
            }, uniquingKeysWith: min))
        }
        for certificate in certificates {
            guard let threshold = schedule.withLock({ $0.due(certificate, at: now) }) else { continue }
            logger.warning("certificate_expiring", [
                ("merchantId", .string(certificate.merchantId)), ("kind", .string(certificate.kind.rawValue)),
                ("publicKeyHash", .string(certificate.publicKeyHash ?? "")),
                ("notAfter", .string(CertificateExpiry.iso8601(certificate.notAfter))),
                ("daysLeft", .int(certificate.daysLeft(at: now))), ("thresholdDays", .int(threshold)),
            ])
        }
        return certificates
    }

    static func labels(_ certificate: CertificateExpiry) -> [String: String] {
        var labels = ["merchant": certificate.merchantId, "kind": certificate.kind.rawValue]
        if let hash = certificate.publicKeyHash { labels["public_key_hash"] = hash }
        return labels
    }
}


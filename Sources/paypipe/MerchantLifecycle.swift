import Foundation
import PaymentStages
import Postgres

/// `paypipe merchant certs` and `paypipe merchant keys [--usage]`: what an operator rotating Apple Pay certificates
/// and keys needs (docs/security.md, "Merchant identities"). Reads configuration and usage only, never secrets.
enum MerchantLifecycle {
    static func certificates(on connection: PostgresConnection, json: Bool, now: Date = Date()) throws -> String {
        let certificates = try MerchantStore.listConfigs(on: connection).flatMap { CertificateExpiry.certificates(of: $0.id, config: $0.config) }
        let rows = certificates.map { certificate -> [String] in
            [certificate.merchantId, certificate.kind.rawValue, certificate.publicKeyHash ?? "-",
             CertificateExpiry.iso8601(certificate.notAfter), String(certificate.daysLeft(at: now)),
             certificate.warningThreshold(at: now).map { "within \($0) days" } ?? "ok"]
        }
        return render(["MERCHANT", "KIND", "PUBLIC KEY HASH", "NOT AFTER", "DAYS LEFT", "STATE"], rows, json: json)
    }

    static func keys(on connection: PostgresConnection, usage: Bool, json: Bool) throws -> String {
        let configs = try MerchantStore.listConfigs(on: connection)
        let used = usage ? try KeyUsageCounter.usage(on: connection) : []
        var usageByKey: [[String]: KeyUsageCounter.Usage] = [:]
        for entry in used { usageByKey[[entry.merchantId, entry.publicKeyHash]] = entry }
        var configured: Set<[String]> = []
        var rows: [[String]] = []
        for (id, config) in configs {
            for identity in config.identities {
                configured.insert([id, identity.publicKeyHash])
                var row = [id, identity.publicKeyHash, identity.keyType, identity.notAfter ?? "-"]
                if usage { row += usageColumns(usageByKey[[id, identity.publicKeyHash]]) }
                rows.append(row)
            }
        }
        // Keys that decrypted tokens but are no longer in the merchant's document.
        for entry in used where !configured.contains([entry.merchantId, entry.publicKeyHash]) {
            rows.append([entry.merchantId, entry.publicKeyHash, "(removed)", "-"] + usageColumns(entry))
        }
        var header = ["MERCHANT", "PUBLIC KEY HASH", "KEY TYPE", "NOT AFTER"]
        if usage { header += ["TOKENS", "FIRST USED", "LAST USED"] }
        return render(header, rows, json: json)
    }

    private static func usageColumns(_ usage: KeyUsageCounter.Usage?) -> [String] {
        guard let usage else { return ["0", "-", "-"] }
        return [String(usage.tokens), CertificateExpiry.iso8601(usage.firstUsedAt), CertificateExpiry.iso8601(usage.lastUsedAt)]
    }

    /// An aligned table, or one JSON object per row keyed by the lower-cased headers; each line ends in a newline.
    private static func render(_ header: [String], _ rows: [[String]], json: Bool) -> String {
        let table = TextTable(header: header, rows: rows)
        if json { return rows.isEmpty ? "" : table.jsonLines() + "\n" }
        return table.rendered() + "\n"
    }
}

import ApplePay
import Foundation
import Pipeline
import Postgres
import Synchronization

/// Tokens decrypted per merchant and `publicKeyHash`: counted in memory as the decrypt stage decrypts (a
/// redelivered token counts again), exported as `paypipe_tokens_decrypted_total{merchant,public_key_hash}` and added
/// to `merchant_key_usage` by the worker's upkeep every `PAYPIPE_RECONCILE_INTERVAL` (a crash loses at most one
/// interval's counts, never the last-used time of a key still in use, which the next tokens set again).
public final class KeyUsageCounter: Sendable {
    public static let metric = "paypipe_tokens_decrypted_total"

    public struct Key: Hashable, Sendable {
        public let merchantId: String
        public let publicKeyHash: String
    }

    public struct Pending: Sendable, Equatable {
        public var tokens: Int
        public var firstAt: Date
        public var lastAt: Date
    }

    private let pending = Mutex<[Key: Pending]>([:])
    private let metrics = AttachedMetrics()

    public init() {}

    public func attach(metrics registry: MetricsRegistry) {
        metrics.attach(registry) { $0.register(Self.metric, kind: .counter, help: "Tokens decrypted, by merchant and publicKeyHash (base64).") }
    }

    public func record(merchantId: String, publicKeyHash: [UInt8], at now: Date = Date()) {
        let key = Key(merchantId: merchantId, publicKeyHash: Data(publicKeyHash).base64EncodedString())
        pending.withLock { pending in
            if var entry = pending[key] {
                entry.tokens += 1
                entry.lastAt = now
                pending[key] = entry
            } else {
                pending[key] = Pending(tokens: 1, firstAt: now, lastAt: now)
            }
        }
        metrics.report { $0.increment(Self.metric, labels: ["merchant": key.merchantId, "public_key_hash": key.publicKeyHash]) }
    }

    /// Adds what was counted since the last flush to `merchant_key_usage` (one statement). Counts taken are put back
    /// if the statement fails, so the next round writes them.
    public func flush(on connection: PostgresConnection) throws {
        let taken = pending.withLock { pending in
            defer { pending = [:] }
            return pending
        }
        guard !taken.isEmpty else { return }
        let entries = Array(taken)
        do {
            try connection.query(
                """
                INSERT INTO merchant_key_usage AS u (merchant_id, public_key_hash, tokens, first_used_at, last_used_at)
                SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::timestamptz[], $5::timestamptz[])
                ON CONFLICT (merchant_id, public_key_hash) DO UPDATE SET tokens = u.tokens + EXCLUDED.tokens,
                    last_used_at = greatest(u.last_used_at, EXCLUDED.last_used_at)
                """,
                [PostgresArray(entries.map(\.key.merchantId)), PostgresArray(entries.map(\.key.publicKeyHash)),
                 PostgresArray(entries.map { Int64($0.value.tokens) }), PostgresArray(entries.map(\.value.firstAt)),
                 PostgresArray(entries.map(\.value.lastAt))])
        } catch {
            pending.withLock { pending in
                for (key, value) in taken {
                    if let current = pending[key] {
                        pending[key] = Pending(tokens: current.tokens + value.tokens, firstAt: min(current.firstAt, value.firstAt),
                                               lastAt: max(current.lastAt, value.lastAt))
                    } else {
                        pending[key] = value
                    }
                }
            }
            throw error
        }
    }

    /// One row of `merchant_key_usage`.
    public struct Usage: Sendable, Equatable {
        public let merchantId: String
        public let publicKeyHash: String
        public let tokens: Int64
        public let firstUsedAt: Date
        public let lastUsedAt: Date
    }

    public static func usage(on connection: PostgresConnection) throws -> [Usage] {
        try connection.query(
            "SELECT merchant_id, public_key_hash, tokens, first_used_at, last_used_at FROM merchant_key_usage ORDER BY 1, 2"
        ).map { row in
            Usage(merchantId: try row.decode("merchant_id", as: String.self), publicKeyHash: try row.decode("public_key_hash", as: String.self),
                  tokens: try row.decode("tokens", as: Int64.self), firstUsedAt: try row.decode("first_used_at", as: Date.self),
                  lastUsedAt: try row.decode("last_used_at", as: Date.self))
        }
    }
}

/// Payments by token type and merchant, exported as `paypipe_payments_by_token_type_total{merchant,token_type}`:
/// counted when decrypt accepts a job's token or credential (once per batch; a redelivered job counts again), so the
/// share of merchant tokens (MPAN) a merchant receives is visible before any credential is stored.
public final class TokenTypeCounter: Sendable {
    public static let metric = "paypipe_payments_by_token_type_total"

    private let metrics = AttachedMetrics()

    public init() {}

    public func attach(metrics registry: MetricsRegistry) {
        metrics.attach(registry) { $0.register(Self.metric, kind: .counter, help: "Payments accepted by decrypt, by merchant and token type (merchant, device, unknown).") }
    }

    public func record(merchantId: String, tokenType: TokenType) {
        metrics.report { $0.increment(Self.metric, labels: ["merchant": merchantId, "token_type": tokenType.rawValue]) }
    }

    /// What a payment records about its token: from the decrypted data when PayPipe decrypts (``TokenType/fromDecrypted(merchantTokenIdentifier:)``),
    /// otherwise `unknown` (the processor decrypts, or the job carried a processor's credential, and neither reports it).
    static func facts(_ decrypted: DecryptedPaymentData?) -> TokenFacts {
        guard let decrypted else { return TokenFacts(type: .unknown) }
        let type = TokenType.fromDecrypted(merchantTokenIdentifier: decrypted.merchantTokenIdentifier)
        guard type == .merchant else { return TokenFacts(type: type) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let metadata = decrypted.merchantTokenMetadata.flatMap { try? encoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) }
        return TokenFacts(type: type, merchantTokenIdentifier: decrypted.merchantTokenIdentifier, merchantTokenMetadata: metadata)
    }
}

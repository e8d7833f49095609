import Foundation
import JSON
import Pipeline
import Postgres

/// The payments of one decrypt batch that passed every token check in Swift, inserted in **one** statement already
/// `decrypted`, with their card data and both audit events (the statement is the store's).
///
/// Why: the one-by-one path costs four statements per job (insert + `received` event, claim the `transactionId`,
/// store card data, transition + event). Here the batch is verified first with one clock, `receivedAt`, which then
/// becomes the payments' `first_received_at`, so each token was checked against exactly its payment's first-received
/// time, as the one-by-one path does. The insert skips a row that hits *any* unique key: an existing (merchant, job
/// id) — a duplicate or redelivery — or a `transactionId` another payment already claimed — a replay. A skipped row
/// is not settled: the one-by-one path then finds the existing payment or detects
/// the replay and does exactly what it always did.
struct DecryptBatch {
    /// One job to insert, with the id its card data was sealed for (AAD = payment id).
    struct Row {
        let index: Int
        let paymentId: UUID
        let job: PaymentJob
        let transactionId: String
        let cardData: DataVault.SealedBox
    }

    private(set) var rows: [Row] = []
    private var transactionIds: Set<String> = []

    /// Whether no earlier row of this batch claims `transactionId`: a token repeated inside the batch is left to the
    /// one-by-one path, which fails the later job `token_replayed` in message order.
    func isUnclaimed(_ transactionId: String) -> Bool {
        !transactionIds.contains(transactionId)
    }

    mutating func append(_ row: Row) {
        precondition(isUnclaimed(row.transactionId), "a transactionId is claimed once per batch")
        transactionIds.insert(row.transactionId)
        rows.append(row)
    }

    /// The time as PostgreSQL stores it (whole microseconds), so the clock the tokens were verified with is exactly
    /// the `first_received_at` that is read back later.
    static func databaseTime(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1_000_000).rounded() / 1_000_000)
    }

    /// Inserts the rows (``PaymentStore/insertDecrypted(_:receivedAt:actor:on:)``) and returns the ids of the payments
    /// actually created.
    func insert(receivedAt: Date, on transaction: PostgresConnection) throws -> Set<UUID> {
        try PaymentStore().insertDecrypted(
            rows.map { PaymentStore.DecryptedPayment(id: $0.paymentId, job: $0.job, metadataJSON: Self.metadataJSON($0.job.metadata),
                                                     transactionId: $0.transactionId, cardData: $0.cardData) },
            receivedAt: receivedAt, actor: "decrypt", on: transaction)
    }

    /// The job's metadata as a JSON object for the `jsonb` column (which normalises key order), for both paths; written
    /// with the JSON module rather than `JSONEncoder`, which cost more than the rest of building the row.
    static func metadataJSON(_ metadata: [String: String]) -> String {
        JSONValue.object(metadata.map { (key: $0.key, value: .string($0.value)) }).serializedString
    }
}

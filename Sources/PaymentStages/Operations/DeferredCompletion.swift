import Foundation
import Pipeline
import Postgres

/// Deferred payments in the operations worker (a job with `amountPending`; the rules in ``DeferredAmount``):
/// `payment.complete.requested` sets the amount and hands the payment back to authorize, whose AUTH then goes through
/// submit's exactly-once protocol like any other (its attempt committed before the call, a lost answer reconciled by
/// the processor's query before anything is sent again); the reconciler's round fails those whose credential expired.
/// Not an operation (it never reaches a processor), so a component of its own beside the stage in ``OperationsWorker``.
public struct DeferredCompletion: Sendable {
    /// How many waiting payments one reconciler round looks at.
    static let expiryBatch = 100

    /// The merchants: each one's connector says how long a deferred credential lives.
    let directory: MerchantDirectory
    /// `paypipe_payments_awaiting_amount`, `paypipe_deferred_payments_total`.
    let metrics: DeferredMetrics

    init(directory: MerchantDirectory, metrics: DeferredMetrics) {
        self.directory = directory
        self.metrics = metrics
    }

    /// The batch's completions in one transaction, each decided under its payment's lock with the batch's clock
    /// (`clock`: read from the database when nil; a test's otherwise). A payment named twice in the batch is decided
    /// by the first, the second seeing its result.
    func complete(_ requests: [CompletionRequest], database: PostgresConnection, clock: BatchClock? = nil) -> [Result<StageOutcome, StageFailure>] {
        guard !requests.isEmpty else { return [] }
        var committed = (completed: 0, expired: 0)
        do {
            let results = try database.transaction { transaction in
                let now = try clock ?? BatchClock.read(transaction)
                let store = PaymentStore()
                var snapshots = try store.deferredSnapshots(requests.map(\.paymentId), on: transaction)
                // The batch's merchants, looked up once; one whose configuration cannot be loaded fails its own
                // completions alone (its lifetime unknown, none is decided).
                let merchants = try directory.lookups(Set(snapshots.values.map(\.merchantId)), on: transaction)
                let lifetimes = Self.deferredLifetimes(merchants)
                var completing: [(id: UUID, amount: Int64)] = [], expiring: [PaymentStore.Failing] = []
                var results: [Result<StageOutcome, StageFailure>] = []
                for request in requests {
                    let snapshot = snapshots[request.paymentId]
                    if let snapshot, case .unavailable(let failure)? = merchants[snapshot.merchantId] {
                        results.append(.failure(failure))
                        continue
                    }
                    // In the payment's trace: authorize's span continues the job's, not the completion's.
                    let message = snapshot.map { $0.message(paymentId: request.paymentId) }
                    switch DeferredAmount.complete(snapshot, merchantId: request.merchantId, amount: request.amount, now: now.database,
                                                   lifetime: snapshot.flatMap { lifetimes[$0.merchantId] }) {
                    case .complete(let amount):
                        completing.append((request.paymentId, amount))
                        snapshots[request.paymentId] = snapshot?.completed(amount: amount, at: now.database)
                        results.append(.success(.handOff(to: .authorize, message!)))
                    case .repeated(let handOff):
                        results.append(.success(handOff ? .handOff(to: .authorize, message!)
                                                        : .settled(note: "already_completed", reason: "the payment was completed with this amount before")))
                    case .expire:
                        expiring.append(try PaymentStore.Failing(paymentId: request.paymentId, from: .awaitingAmount, rejection: Self.expired))
                        snapshots[request.paymentId] = snapshot?.failed()
                        results.append(.success(.handOff(to: .notify, message!)))
                    case .wait(let code, let reason):
                        results.append(.failure(.transient(code: code, reason: reason)))
                    case .refuse(let code, let reason):
                        results.append(.failure(.unattributable(code: code, reason: reason)))
                    }
                }
                // The rows are locked: a statement that leaves one unwritten is a bug, not a race.
                guard try store.completeAmount(completing, on: transaction).count == completing.count,
                      try store.fail(expiring, on: transaction).count == expiring.count else {
                    throw StageFailure.transient(code: "database_conflict", reason: "a locked payment of the batch changed status")
                }
                committed = (completing.count, expiring.count)
                return results
            }
            metrics.committed(completed: committed.completed, expired: committed.expired)
            return results
        } catch {
            return Array(repeating: .failure(FailureClassifier.classify(error)), count: requests.count)
        }
    }

    /// The reconciler's expiry sweep: payments waiting for their amount whose credential's lifetime is over at
    /// `clock`'s database time fail `prime_expired`, nothing sent; their hand-offs to notify.
    public func expireDeferred(clock: BatchClock, on connection: PostgresConnection) throws -> [StageMessage] {
        let expired = try connection.transaction { transaction -> [StageMessage] in
            let store = PaymentStore()
            let waiting = try store.awaitingAmount(limit: Self.expiryBatch, on: transaction)
            guard !waiting.isEmpty else { return [] }
            // A merchant not loadable now is left out: its payments wait for a later sweep.
            let lifetimes = Self.deferredLifetimes(try directory.lookups(Set(waiting.map(\.message.merchantId)), on: transaction))
            let expired = DeferredAmount.expired(waiting, now: clock.database) { lifetimes[$0] }
            let written = try store.fail(
                try expired.map { try PaymentStore.Failing(paymentId: $0.paymentId, from: .awaitingAmount, rejection: Self.expired) }, on: transaction)
            return expired.filter { written.contains($0.paymentId) }
        }
        metrics.committed(completed: 0, expired: expired.count)
        return expired
    }

    static let expired = Rejection(code: "prime_expired", reason: "the deferred payment's credential outlived its documented lifetime before a completion: nothing sent")

    /// How long each merchant's connector keeps a deferred credential (``ConnectorCapabilities/deferredAmountLifetime``);
    /// merchants whose connector has none, and those not found or not loadable, are absent.
    static func deferredLifetimes(_ merchants: [String: MerchantLookup<MerchantDirectory.Entry>]) -> [String: TimeInterval] {
        merchants.compactMapValues { lookup in
            guard case .found(let entry) = lookup, let capabilities = entry.merchant.config.gateway?.connector.capabilities,
                  capabilities.deferredAmount else { return nil }
            return capabilities.deferredAmountLifetime
        }
    }
}

/// The completion's read of ``Pipeline/PaymentStore``, kept with the step that decides on it (`PaymentStore` stays the
/// one writer of `payments`; this only reads, under the payments' row locks).
extension PaymentStore {
    /// What the completion decides on (``DeferredAmount/Snapshot``), locked, for the payments that exist.
    public func deferredSnapshots(_ ids: [UUID], on transaction: PostgresConnection) throws -> [UUID: DeferredAmount.Snapshot] {
        guard !ids.isEmpty else { return [:] }
        let rows = try transaction.query(
            """
            SELECT id, merchant_id, job_id, status, amount_minor, amount_completed_at, first_received_at, trace_parent, trace_state FROM payments
            WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE
            """, [PostgresArray(Array(Set(ids)))])
        var snapshots: [UUID: DeferredAmount.Snapshot] = [:]
        for row in rows {
            guard let status = PaymentStatus(rawValue: try row.decode("status", as: String.self)) else { continue }
            snapshots[try row.decode("id", as: UUID.self)] = DeferredAmount.Snapshot(
                merchantId: try row.decode("merchant_id", as: String.self), jobId: try row.decode("job_id", as: String.self), status: status,
                amountMinor: try row.decode("amount_minor", as: Int64?.self), completedAt: try row.decode("amount_completed_at", as: Date?.self),
                receivedAt: try row.decode("first_received_at", as: Date.self),
                traceparent: try row.decode("trace_parent", as: String?.self), tracestate: try row.decode("trace_state", as: String?.self))
        }
        return snapshots
    }
}

// MARK: Their series

/// Deferred payments' visibility on the operations worker (docs/operations.md): how many wait for their amount now
/// (a gauge every worker sets from the shared table at each upkeep round: aggregate with `max`), and how many were
/// completed or expired (counted once committed, from start-up; Prometheus sums the workers). Both present at 0.
final class DeferredMetrics: Sendable {
    static let awaitingMetric = "paypipe_payments_awaiting_amount"
    static let outcomesMetric = "paypipe_deferred_payments_total"

    private let metrics = AttachedMetrics()

    func attach(metrics registry: MetricsRegistry) {
        metrics.attach(registry) { registry in
            registry.register(Self.awaitingMetric, kind: .gauge, help: "Deferred payments waiting for their amount (all workers' shared view).")
            registry.set(Self.awaitingMetric, labels: [:], to: 0)
            registry.register(Self.outcomesMetric, kind: .counter,
                              help: "Deferred payments that left awaiting_amount: completed (amount set, back to authorize) or expired (prime_expired).")
            for outcome in ["completed", "expired"] { registry.increment(Self.outcomesMetric, labels: ["outcome": outcome], by: 0) }
        }
    }

    func awaiting(_ count: Int) {
        metrics.report { $0.set(Self.awaitingMetric, labels: [:], to: Double(count)) }
    }

    func committed(completed: Int, expired: Int) {
        metrics.report { registry in
            if completed > 0 { registry.increment(Self.outcomesMetric, labels: ["outcome": "completed"], by: Double(completed)) }
            if expired > 0 { registry.increment(Self.outcomesMetric, labels: ["outcome": "expired"], by: Double(expired)) }
        }
    }
}

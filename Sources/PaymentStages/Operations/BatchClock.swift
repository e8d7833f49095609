import Foundation
import Postgres

/// The two clocks of one batch, read once at its start and passed to every decision as data: the database's (what
/// its stamps, such as an attempt's `reconcile_after` or a payment's `capture_deadline`, are compared with) and this
/// worker's (when a message comes back here). Decisions never read a clock themselves, so each is unit-tested with an
/// injected one.
public struct BatchClock: Sendable, Equatable {
    public var database: Date
    public var worker: Date

    public init(database: Date, worker: Date) {
        self.database = database
        self.worker = worker
    }

    /// The same clock for both (a test's).
    public init(_ now: Date) { self.init(database: now, worker: now) }

    /// A database time on this worker's clock: as far ahead of `worker` as it is of `database`.
    public func local(_ databaseTime: Date) -> Date { worker.addingTimeInterval(databaseTime.timeIntervalSince(database)) }

    /// Reads both clocks (one statement); taken before the batch's locks, so its database time is never later than
    /// what the locked rows were decided at: a wait it computes is never too short.
    public static func read(_ connection: PostgresConnection) throws -> BatchClock {
        let worker = Date()
        return BatchClock(database: try connection.query("SELECT clock_timestamp() AS now")[0].decode("now", as: Date.self), worker: worker)
    }
}

import JWT
import Synchronization

/// Every AUTH the simulator accepted, by order reference: what TRANSACTIONQUERY reports and what tests count to
/// assert "at most one AUTH per payment".
public final class SimulatorLedger: Sendable {
    private struct State {
        var records: [String: [JSONValue]] = [:]
        var total = 0
        var sequence = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// A fresh gateway transaction reference (`9-9-N`).
    func nextTransactionReference() -> String {
        state.withLock { state in
            state.sequence += 1
            return "9-9-\(state.sequence)"
        }
    }

    func record(orderReference: String, item: JSONValue) {
        state.withLock { state in
            state.records[orderReference, default: []].append(item)
            state.total += 1
        }
    }

    /// The recorded AUTH response items for an order, oldest first.
    public func records(orderReference: String) -> [JSONValue] {
        state.withLock { $0.records[orderReference] ?? [] }
    }

    /// Every recorded AUTH item with its order reference, in order of recording per reference.
    public func allRecords() -> [(orderReference: String, item: JSONValue)] {
        state.withLock { state in
            state.records.sorted { $0.key < $1.key }.flatMap { entry in entry.value.map { (entry.key, $0) } }
        }
    }

    public func authCount(orderReference: String) -> Int {
        state.withLock { $0.records[orderReference]?.count ?? 0 }
    }

    /// AUTHs recorded per order reference (chaos runs assert at most one each).
    public func authCounts() -> [String: Int] {
        state.withLock { $0.records.mapValues(\.count) }
    }

    public var totalAuths: Int {
        state.withLock { $0.total }
    }
}

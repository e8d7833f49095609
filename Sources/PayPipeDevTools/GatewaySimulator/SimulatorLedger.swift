import JWT
import Synchronization

/// Every AUTH the simulator accepted, by order reference: what TRANSACTIONQUERY reports and what tests count to
/// assert "at most one AUTH per payment".
public final class SimulatorLedger: Sendable {
    private struct State {
        var records: [String: [JSONValue]] = [:]
        var total = 0
        var sequence = 0
        /// The last /json/ requests received, oldest first (``captured``).
        var captures: [JSONValue] = []
        /// Recorded items that are not AUTHs (REFUNDs): queryable, never counted as AUTHs.
        var others: [JSONValue] = []
        /// Every TRANSACTIONUPDATE and REFUND that took effect, in order (``operations``).
        var operations: [JSONValue] = []
    }

    /// How many requests ``captured`` keeps.
    public static let captureLimit = 200

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

    /// Every recorded item (AUTHs and REFUNDs) whose fields match every filter: each filter names a field and the
    /// values any of which it may have (TRANSACTIONQUERY's `filter`), at most `limit` of them.
    public func records(matching filters: [(field: String, values: Set<String>)], limit: Int = 500) -> [JSONValue] {
        state.withLock { state in
            let all = state.records.sorted { $0.key < $1.key }.flatMap(\.value) + state.others
            return Array(all.filter { item in
                filters.allSatisfy { filter in item[filter.field]?.stringValue.map(filter.values.contains) ?? false }
            }.prefix(limit))
        }
    }

    /// Applies `change` to the recorded item with this transaction reference; nil when there is none. `change`
    /// returns its own answer (it may refuse and leave the item unchanged).
    func update<T: Sendable>(transactionReference: String, _ change: (inout JSONValue) -> T) -> T? {
        state.withLock { state in
            let matches: (JSONValue) -> Bool = { $0["transactionreference"]?.stringValue == transactionReference }
            for (key, items) in state.records {
                guard let index = items.firstIndex(where: matches) else { continue }
                return change(&state.records[key]![index])
            }
            guard let index = state.others.firstIndex(where: matches) else { return nil }
            return change(&state.others[index])
        }
    }

    /// Records an item that is not an AUTH (a REFUND): queryable, not counted among the AUTHs.
    func recordOther(_ item: JSONValue) {
        state.withLock { $0.others.append(item) }
    }

    func recordOperation(_ entry: JSONValue) {
        state.withLock { $0.operations.append(entry) }
    }

    /// The operation ledger: every TRANSACTIONUPDATE and REFUND that took effect, oldest first, each with
    /// `requesttypedescription`, the `requestreference` it was sent under (PayPipe's names its operation attempt),
    /// the `transactionreference` it changed (a REFUND's parent), its `updates` or refunded `baseamount`: what chaos runs
    /// count to assert at most one gateway operation per operation.
    public var operations: [JSONValue] {
        state.withLock { $0.operations }
    }

    /// Keeps one received /json/ request (headers and parsed body) for contract tests (`GET /_sim/requests`).
    func capture(_ request: JSONValue) {
        state.withLock { state in
            state.captures.append(request)
            if state.captures.count > Self.captureLimit { state.captures.removeFirst(state.captures.count - Self.captureLimit) }
        }
    }

    public var captured: [JSONValue] {
        state.withLock { $0.captures }
    }

    public var totalAuths: Int {
        state.withLock { $0.total }
    }
}

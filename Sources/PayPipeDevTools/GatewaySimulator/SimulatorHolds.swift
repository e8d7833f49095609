import Foundation
import Synchronization

/// Answers the simulator keeps back: a test (or the adversarial chaos run) can make an AUTH or a status query wait,
/// after the gateway has decided it, until it is released, so that two consumers' calls overlap exactly where a race
/// would hurt. The answer is computed when the request arrives (what the gateway knew then), only its delivery waits.
public final class SimulatorHolds: Sendable {
    /// Which requests a hold catches: a request type (`AUTH` also catches `THREEDQUERY,AUTH`) and an order reference
    /// prefix (a per-payment reference starts with the merchant's).
    public struct Rule: Sendable, Equatable {
        public let requestType: String
        public let orderReferencePrefix: String
        /// Instead of holding: the request is never processed and its connection is dropped (an answer lost before
        /// processing, which the client cannot tell from one lost after).
        public let loseUnprocessed: Bool
        /// Instead of holding: the request is processed (it takes effect) and its connection is dropped (an answer
        /// lost after processing).
        public let loseProcessed: Bool

        public init(requestType: String, orderReferencePrefix: String = "", loseUnprocessed: Bool = false, loseProcessed: Bool = false) {
            self.requestType = requestType
            self.orderReferencePrefix = orderReferencePrefix
            self.loseUnprocessed = loseUnprocessed
            self.loseProcessed = loseProcessed
        }

        var holdsAnswer: Bool { !loseUnprocessed && !loseProcessed }

        func matches(requestTypes: [String], orderReference: String) -> Bool {
            requestTypes.contains(requestType) && orderReference.hasPrefix(orderReferencePrefix)
        }
    }

    /// Answers leave in arrival order: the n-th to arrive goes once `released` exceeds n.
    private struct Hold {
        let rule: Rule
        var arrived = 0
        var waiting = 0
        var released = 0
    }

    private struct State {
        var holds: [Int: Hold] = [:]
        var next = 1
    }

    private let state = Mutex(State())
    /// A held answer is delivered after this long at the latest, so a forgotten hold cannot wedge a server thread.
    public let maximumHoldSeconds: Double

    public init(maximumHoldSeconds: Double = 60) {
        self.maximumHoldSeconds = maximumHoldSeconds
    }

    /// Starts holding every matching answer; returns the hold's id.
    @discardableResult
    public func hold(_ rule: Rule) -> Int {
        state.withLock { state in
            let id = state.next
            state.next += 1
            state.holds[id] = Hold(rule: rule)
            return id
        }
    }

    /// Lets the oldest held (or the next matching) answer go.
    public func releaseOne(_ id: Int) {
        state.withLock { $0.holds[id]?.released += 1 }
    }

    /// Ends the hold: every answer it keeps goes, later ones are not held.
    public func release(_ id: Int) {
        _ = state.withLock { $0.holds.removeValue(forKey: id) }
    }

    /// How many matching requests arrived since the hold started (held or let through by a ticket).
    public func arrivals(_ id: Int) -> Int {
        state.withLock { $0.holds[id]?.arrived ?? 0 }
    }

    /// How many answers the hold keeps back right now.
    public func waiting(_ id: Int) -> Int {
        state.withLock { $0.holds[id]?.waiting ?? 0 }
    }

    /// Whether a `loseUnprocessed` rule catches this request (counted as an arrival).
    func losesUnprocessed(requestTypes: [String], orderReference: String) -> Bool {
        catches(\.loseUnprocessed, requestTypes: requestTypes, orderReference: orderReference)
    }

    /// Whether a `loseProcessed` rule catches this request (counted as an arrival).
    func losesProcessed(requestTypes: [String], orderReference: String) -> Bool {
        catches(\.loseProcessed, requestTypes: requestTypes, orderReference: orderReference)
    }

    private func catches(_ kind: KeyPath<Rule, Bool>, requestTypes: [String], orderReference: String) -> Bool {
        state.withLock { state in
            guard let (id, _) = state.holds.filter({
                $0.value.rule[keyPath: kind] && $0.value.rule.matches(requestTypes: requestTypes, orderReference: orderReference)
            }).min(by: { $0.key < $1.key }) else { return false }
            state.holds[id]?.arrived += 1
            return true
        }
    }

    /// Blocks the calling server thread while a hold catches this answer.
    func awaitRelease(requestTypes: [String], orderReference: String) {
        let ticket: (id: Int, number: Int)? = state.withLock { state in
            // The oldest matching hold catches it.
            guard let (id, hold) = state.holds.filter({
                $0.value.rule.holdsAnswer && $0.value.rule.matches(requestTypes: requestTypes, orderReference: orderReference)
            }).min(by: { $0.key < $1.key }) else { return nil }
            state.holds[id]?.arrived += 1
            state.holds[id]?.waiting += 1
            return (id, hold.arrived)
        }
        guard let ticket else { return }
        let deadline = Date().addingTimeInterval(maximumHoldSeconds)
        while true {
            let released: Bool = state.withLock { state in
                guard var hold = state.holds[ticket.id] else { return true }
                if hold.released > ticket.number || Date() >= deadline {
                    hold.waiting -= 1
                    state.holds[ticket.id] = hold
                    return true
                }
                return false
            }
            if released { return }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }
}

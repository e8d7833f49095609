/// When a lane stops collecting deliveries and handles its batch.
///
/// Every batch costs a fixed amount of work wherever it goes: a transaction and its commit, the statements' planning
/// and start-up, a confirm round with the broker, the wake-ups of the threads involved. When the machine is
/// saturated, that work is taken from the stage that binds, so small batches lower the throughput of the whole
/// pipeline (bench/results/performance-history.md, set Q). A lane that comes back to at least half a batch already
/// waiting has fallen behind its input, so it may wait up to `linger` for the batch to fill. A lane that finds less
/// has kept up: it handles what it has at once, so a pipeline with spare capacity adds no latency. A lane's first
/// batch after it starts also waits up to `linger` to fill: a worker starts (is restarted, or added by scale-out on
/// queue depth) mostly in front of a backlog, whose deliveries are still arriving when the first one is in hand;
/// without the wait that first batch held however many had arrived by then, and how many batches the backlog took
/// depended on timing (scripts/bench --only cost counts statements per payment, docs/performance.md "Cost budget").
/// The policy is a value: ``StageRuntime`` asks it after every receive.
public struct BatchFill: Sendable, Equatable {
    /// What the lane does next.
    public enum Step: Sendable, Equatable {
        /// Handle the deliveries in hand.
        case handle
        /// Receive up to `more` further deliveries, waiting at most `seconds`, and ask again.
        case wait(more: Int, seconds: Double)
    }

    /// Deliveries per batch (`PAYPIPE_BATCH_SIZE`).
    public let limit: Int
    /// The longest a busy lane waits for its batch to fill (`PAYPIPE_BATCH_LINGER`); 0 never waits.
    public let linger: Double

    public init(limit: Int, linger: Double) {
        precondition(limit >= 1 && linger >= 0, "a batch holds at least one delivery and waits no negative time")
        (self.limit, self.linger) = (limit, linger)
    }

    /// `count` deliveries in hand, `elapsed` seconds since the first receive returned them; `foundWaiting` is how many
    /// were already buffered when the lane asked for its batch (0: it waited for the first one); `first`: the lane's
    /// first batch since it started.
    public func next(count: Int, foundWaiting: Int, elapsed: Double, first: Bool = false) -> Step {
        guard count < limit, first || isBehind(foundWaiting: foundWaiting), elapsed < linger else { return .handle }
        return .wait(more: limit - count, seconds: linger - elapsed)
    }

    /// Half a batch queued up while the lane handled its last one: its input arrives about as fast as it drains.
    public func isBehind(foundWaiting: Int) -> Bool {
        foundWaiting > 0 && foundWaiting * 2 >= limit
    }
}

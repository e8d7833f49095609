/// Owner-thread bookkeeping of one publish request: completes it once every message is settled.
final class AMQPPublishWindow {
    let request: AMQPPublishRequest
    private var unsettled: Int
    /// The failure of the lowest-indexed failed message, reported to the caller.
    private var firstFailure: (index: Int, error: AMQPError)?

    init(request: AMQPPublishRequest) {
        self.request = request
        unsettled = request.messages.count
    }

    /// Records the final outcome of message `index` (called exactly once per message).
    func settle(index: Int, failure: AMQPError?) {
        if let failure, index < firstFailure?.index ?? .max {
            firstFailure = (index, failure)
        }
        unsettled -= 1
        guard unsettled == 0 else { return }
        if let firstFailure {
            request.complete(.failure(firstFailure.error))
        } else {
            request.complete(.success(()))
        }
    }
}

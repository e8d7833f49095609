import Foundation

/// Publishes with publisher confirms over one connection owned by a dedicated thread.
///
/// `publish` hands the messages to the owner thread and blocks the caller until the broker has
/// confirmed every one of them (at-least-once). The owner thread connects in the background as soon
/// as the publisher exists, declares the topology on every (re)connect, services heartbeats while
/// callers are busy elsewhere, and after a connection loss reconnects with capped exponential
/// backoff and re-publishes whatever was not confirmed, so duplicates are possible after a failure.
/// Safe to share between threads; concurrent `publish` calls are pipelined on the same channel.
public final class AMQPPublisher: Sendable {
    private let core: AMQPPublisherCore
    private let thread: AMQPOwnerThread

    /// `onEvent` runs on the owner thread; keep it short.
    public init(configuration: AMQPConfiguration, topology: AMQPTopology,
                onEvent: @escaping @Sendable (AMQPEvent) -> Void = { _ in }) {
        let core = AMQPPublisherCore(configuration: configuration, topology: topology, onEvent: onEvent)
        self.core = core
        thread = AMQPOwnerThread(name: "amqp-publisher") {
            AMQPPublisherWorker(core: core).run()
        }
    }

    deinit {
        core.requestShutdown()
    }

    /// Publishes all messages as one confirm window (publish all, then wait for the acks) and blocks
    /// until every message is confirmed.
    ///
    /// Throws the failure of the first failing message once all are settled: `.nacked`,
    /// `.unroutable` (mandatory message that no queue took), `.channelClosed` (e.g. 404 for a missing
    /// exchange; messages in flight with it fail too), `.invalidArgument`; `.timeout` if `timeout`
    /// seconds pass first (the messages may still be delivered), `.closed` after `close()`.
    /// A connection loss is not an error: the unconfirmed messages are re-published after reconnecting.
    public func publish(_ messages: [AMQPOutboundMessage], timeout: Double) throws(AMQPError) {
        guard !messages.isEmpty else { return }
        let request = AMQPPublishRequest(messages: messages)
        guard core.submit(request) else { throw .closed }
        let deadline: DispatchTime = timeout.isFinite ? .now() + max(0, timeout) : .distantFuture
        switch request.wait(until: deadline) {
        case .success?: return
        case .failure(let error)?: throw error
        case nil: throw .timeout
        }
    }

    /// Publishes every message as its own confirm window, pipelined, and returns each one's outcome (`nil`: confirmed),
    /// so a caller can tell which of them failed (e.g. which were `.unroutable`). Slower than ``publish(_:timeout:)``
    /// only by the bookkeeping; meant for the exceptional path, after a batch failed.
    public func publishEach(_ messages: [AMQPOutboundMessage], timeout: Double) -> [AMQPError?] {
        let requests = messages.map { AMQPPublishRequest(messages: [$0]) }
        let deadline: DispatchTime = timeout.isFinite ? .now() + max(0, timeout) : .distantFuture
        let accepted = requests.map { core.submit($0) }
        return zip(requests, accepted).map { request, accepted -> AMQPError? in
            guard accepted else { return .closed }
            switch request.wait(until: deadline) {
            case .success?: return nil
            case .failure(let error)?: return error
            case nil: return .timeout
            }
        }
    }

    /// Publishes one message and waits for its confirm.
    public func publish(_ message: AMQPOutboundMessage, timeout: Double) throws(AMQPError) {
        try publish([message], timeout: timeout)
    }

    /// True while the connection is up and prepared.
    public var isConnected: Bool { core.isConnected }

    /// Fails pending publishes with `.closed`, closes the connection and stops the owner thread.
    public func close() {
        core.requestShutdown()
        thread.join(timeoutSeconds: core.configuration.rpcTimeoutSeconds + 5)
    }

    /// Replaces the connection (and its channel) with a new one, to a node of the list chosen afresh; unconfirmed
    /// messages are re-published on it. For a caller whose publishes keep being nacked: RabbitMQ 3.10 can keep nacking
    /// a quorum queue's publishes on a channel that was open while the queue's leader was lost, until the channel is
    /// replaced (seen in `scripts/chaos cluster`).
    public func reconnect() {
        core.requestReconnect()
    }

    #if DEBUG
    /// Test hook (debug builds only): simulates a network failure after `count` further publishes.
    func dropConnection(afterPublishes count: Int) {
        core.requestConnectionDrop(afterPublishes: count)
    }
    #endif
}

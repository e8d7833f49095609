import Foundation

/// Owner-thread half shared by `AMQPPublisher` and `AMQPConsumer`: (re)connects with backoff,
/// numbers connection generations, reports `AMQPEvent`s and sleeps until the socket or the wakeup
/// pipe has something to do.
///
/// The sleep happens in our own `poll(2)`, never inside rabbitmq-c, and lasts at most a quarter of
/// the negotiated heartbeat, so the owner calls back into rabbitmq-c often enough to send and check
/// heartbeats however long the application takes to handle its messages.
final class AMQPConnectionSupervisor {
    private let configuration: AMQPConfiguration
    private let wakeup: AMQPWakeup
    private let onEvent: @Sendable (AMQPEvent) -> Void

    private(set) var connection: AMQPConnection?
    /// Generation of the current (or last) connection; 0 before the first one.
    private(set) var generation: UInt64 = 0
    /// Consecutive attempts since the last successful connect.
    private var attempt = 0
    private var nextAttempt = ContinuousClock.now

    init(core: some AMQPOwnerCore) {
        configuration = core.configuration
        wakeup = core.wakeup
        onEvent = core.onEvent
    }

    /// Connects if the backoff delay has passed. `prepare` sets the fresh connection up (topology,
    /// confirm mode, consume); `didConnect` publishes the new generation before the event is emitted.
    /// Returns the connection, or nil if it is not (yet) up.
    func connectIfDue(prepare: (AMQPConnection) throws(AMQPError) -> Void,
                      didConnect: (UInt64) -> Void) -> AMQPConnection? {
        if let connection { return connection }
        guard ContinuousClock.now >= nextAttempt else { return nil }
        attempt += 1
        do {
            let candidate = try AMQPConnection(configuration: configuration, generation: generation + 1)
            do {
                try prepare(candidate)
            } catch {
                candidate.close()
                throw error
            }
            connection = candidate
            generation += 1
            attempt = 0
            didConnect(generation)
            onEvent(.connected(generation: generation))
            return candidate
        } catch {
            onEvent(.disconnected(reason: "connect attempt \(attempt) failed: \(error)"))
            schedule()
            return nil
        }
    }

    /// Drops the broken connection and schedules the first reconnect attempt.
    func connectionLost(_ error: AMQPError) {
        connection?.close()
        connection = nil
        attempt = 0
        onEvent(.disconnected(reason: error.description))
        schedule()
    }

    /// Closes the connection gracefully (flushing what was written) on shutdown.
    func close() {
        connection?.close()
        connection = nil
    }

    /// Sleeps until the socket is readable, the wakeup pipe is signalled, the reconnect delay has passed
    /// or a quarter heartbeat has elapsed, whichever comes first.
    func waitForActivity() {
        if let connection, connection.hasBufferedInput { return }
        var descriptors = [pollfd(fd: wakeup.readDescriptor, events: Int16(POLLIN), revents: 0)]
        var timeout = idleTimeoutMilliseconds
        if let connection {
            descriptors.append(pollfd(fd: connection.socketDescriptor, events: Int16(POLLIN), revents: 0))
        } else {
            let remaining = ContinuousClock.now.duration(to: nextAttempt)
            timeout = max(0, min(timeout, Int32(clamping: Self.milliseconds(remaining))))
        }
        _ = Glibc.poll(&descriptors, nfds_t(descriptors.count), timeout)
        if descriptors[0].revents != 0 { wakeup.drain() }
    }

    private func schedule() {
        let next = attempt + 1
        let delay = configuration.reconnectBackoff.delay(forAttempt: next)
        nextAttempt = ContinuousClock.now + .milliseconds(Int64(delay * 1000))
        onEvent(.reconnectScheduled(attempt: next, delaySeconds: delay))
    }

    /// Quarter of the heartbeat (rabbitmq-c sends one after a heartbeat interval of silence and gives
    /// up after two); for TLS at most 20 ms, because OpenSSL may hold decrypted bytes that `poll(2)`
    /// cannot see.
    private var idleTimeoutMilliseconds: Int32 {
        let heartbeat = connection?.negotiatedHeartbeat ?? configuration.heartbeatSeconds
        var timeout: Int32 = heartbeat > 0 ? Int32(clamping: heartbeat * 250) : 2_500
        if configuration.tls != nil { timeout = min(timeout, 20) }
        return max(timeout, 1)
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1
    }
}

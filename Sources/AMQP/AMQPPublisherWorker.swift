/// The publisher's owner-thread loop: the only code that touches its `AMQPConnection`.
///
/// Each loop iteration takes new requests, publishes everything queued (reading confirms every
/// `readEvery` messages so the broker's acks never pile up in the socket), then sleeps in `poll(2)`
/// for at most a quarter heartbeat and reads confirms. Confirm sequence numbers restart at 1 after
/// every `confirm.select`; unconfirmed messages are re-queued when the connection drops.
final class AMQPPublisherWorker {
    private static let readEvery = 64
    private static let maxFramesPerRead = 4096

    private let core: AMQPPublisherCore
    private let supervisor: AMQPConnectionSupervisor
    private var queue: [AMQPPendingPublish] = []
    private var queueHead = 0
    private var unconfirmed: [UInt64: AMQPPendingPublish] = [:]
    private var lowestUnconfirmed: UInt64 = 1
    private var nextSequence: UInt64 = 1
    #if DEBUG
    private var dropConnectionCountdown: Int?
    #endif

    init(core: AMQPPublisherCore) {
        self.core = core
        supervisor = AMQPConnectionSupervisor(core: core)
    }

    func run() {
        while true {
            let commands = core.takeCommands()
            for request in commands.requests { enqueue(request) }
            #if DEBUG
            if let count = commands.dropConnectionAfter { dropConnectionCountdown = count }
            #endif
            if commands.reconnect, supervisor.connection != nil { connectionLost(.connectionClosed("reconnect requested")) }
            if commands.shutdown {
                shutDown()
                return
            }
            if connectIfNeeded() { publishQueued() }
            supervisor.waitForActivity()
            readIncoming()
        }
    }

    // MARK: - Steps

    private func enqueue(_ request: AMQPPublishRequest) {
        let window = AMQPPublishWindow(request: request)
        for index in request.messages.indices {
            queue.append(AMQPPendingPublish(window: window, index: index))
        }
    }

    private func connectIfNeeded() -> Bool {
        let core = core
        let connection = supervisor.connectIfDue(
            prepare: { (connection: AMQPConnection) throws(AMQPError) in
                try connection.declare(core.topology)
                try connection.enableConfirms()
            },
            didConnect: { _ in
                resetSequence()
                core.setConnected(true)
            })
        return connection != nil
    }

    private func publishQueued() {
        var sinceRead = 0
        while queueHead < queue.count, let connection = supervisor.connection {
            let pending = queue[queueHead]
            queueHead += 1
            if pending.window.request.isFinished { continue }
            do {
                try connection.publish(pending.message)
            } catch {
                if case .invalidArgument = error {
                    pending.window.settle(index: pending.index, failure: error)
                    if connection.isOpen { continue }
                } else {
                    queueHead -= 1
                }
                connectionLost(error)
                return
            }
            unconfirmed[nextSequence] = pending
            nextSequence += 1
            #if DEBUG
            injectFaultIfRequested(connection)
            #endif
            sinceRead += 1
            if sinceRead == Self.readEvery {
                sinceRead = 0
                readIncoming()
            }
        }
        if queueHead >= queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        }
    }

    private func readIncoming() {
        guard let connection = supervisor.connection else { return }
        for _ in 0..<Self.maxFramesPerRead {
            let frame: AMQPIncomingFrame?
            do {
                frame = try connection.poll()
            } catch {
                handleFailure(error, on: connection)
                return
            }
            switch frame {
            case nil:
                return
            case .ack(let tag, let multiple)?:
                settle(upTo: tag, multiple: multiple, failure: nil)
            case .nack(let tag, let multiple)?:
                settle(upTo: tag, multiple: multiple, failure: .nacked)
            case .returned(let returned)?:
                markReturned(returned)
            case .delivery?, .consumerCancelled?, .ignored?:
                continue
            }
        }
    }

    // MARK: - Confirm bookkeeping

    private func settle(upTo tag: UInt64, multiple: Bool, failure: AMQPError?) {
        if multiple {
            let last = min(tag, nextSequence - 1)
            if lowestUnconfirmed <= last {
                for sequence in lowestUnconfirmed...last {
                    if let pending = unconfirmed.removeValue(forKey: sequence) {
                        pending.window.settle(index: pending.index, failure: failure ?? pending.returned)
                    }
                }
                lowestUnconfirmed = last + 1
            }
        } else if let pending = unconfirmed.removeValue(forKey: tag) {
            pending.window.settle(index: pending.index, failure: failure ?? pending.returned)
        }
        while lowestUnconfirmed < nextSequence, unconfirmed[lowestUnconfirmed] == nil {
            lowestUnconfirmed += 1
        }
    }

    private func markReturned(_ returned: AMQPReturnedMessage) {
        var sequence = lowestUnconfirmed
        while sequence < nextSequence {
            if var pending = unconfirmed[sequence], pending.matches(returned) {
                pending.returned = .unroutable(replyCode: returned.replyCode, text: returned.replyText)
                unconfirmed[sequence] = pending
                return
            }
            sequence += 1
        }
    }

    private func resetSequence() {
        lowestUnconfirmed = 1
        nextSequence = 1
    }

    // MARK: - Failures

    /// A channel exception (e.g. publishing to a missing exchange: 404) is the caller's error, so the
    /// messages in flight on that channel fail with it instead of being re-published forever; the
    /// channel is reopened for the others. Anything else drops the connection.
    private func handleFailure(_ error: AMQPError, on connection: AMQPConnection) {
        guard case .channelClosed = error, connection.isOpen else {
            connectionLost(error)
            return
        }
        let failed = unconfirmed.values
        unconfirmed.removeAll()
        for pending in failed { pending.window.settle(index: pending.index, failure: error) }
        do {
            try connection.enableConfirms()
            resetSequence()
        } catch {
            connectionLost(error)
        }
    }

    /// Re-queues every unconfirmed message (in publish order, ahead of the not yet published ones):
    /// the broker may or may not have them, so they are sent again after the reconnect
    /// (at-least-once; consumers deduplicate).
    private func connectionLost(_ error: AMQPError) {
        var resend = unconfirmed.sorted { $0.key < $1.key }.map { entry in
            var pending = entry.value
            pending.returned = nil
            return pending
        }
        resend.append(contentsOf: queue[queueHead...])
        queue = resend.filter { !$0.window.request.isFinished }
        queueHead = 0
        unconfirmed.removeAll()
        resetSequence()
        core.setConnected(false)
        supervisor.connectionLost(error)
    }

    #if DEBUG
    private func injectFaultIfRequested(_ connection: AMQPConnection) {
        guard let countdown = dropConnectionCountdown else { return }
        if countdown <= 1 {
            dropConnectionCountdown = nil
            connection.simulateNetworkFailure()
        } else {
            dropConnectionCountdown = countdown - 1
        }
    }
    #endif

    private func shutDown() {
        for pending in unconfirmed.values { pending.window.request.complete(.failure(.closed)) }
        for pending in queue[queueHead...] { pending.window.request.complete(.failure(.closed)) }
        unconfirmed.removeAll()
        queue.removeAll()
        queueHead = 0
        supervisor.close()
        core.setConnected(false)
    }
}

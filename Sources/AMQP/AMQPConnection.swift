import CPayPipeShim
import CRabbitMQ
import Foundation

/// One AMQP connection with one channel, over rabbitmq-c.
///
/// Not thread-safe and not `Sendable`: an `amqp_connection_state_t` must only ever be used by one
/// thread. `AMQPPublisher` and `AMQPConsumer` each create theirs on their own owner thread; tools
/// (queue depth, purge, dead-letter inspection) use one directly from a single thread.
///
/// Heartbeats are only serviced while this object is inside a rabbitmq-c call, so an idle user of a
/// bare `AMQPConnection` must keep its operations shorter than the heartbeat timeout, or set
/// `heartbeatSeconds = 0` for short-lived tool connections.
///
/// A channel exception (`AMQPError.channelClosed`, e.g. a passive declare of a missing queue) leaves
/// the connection usable: the channel is reopened on the next operation. Any other failure makes it
/// unusable (`isOpen == false`); create a new one.
public final class AMQPConnection {
    public let configuration: AMQPConfiguration
    /// Stamped on deliveries this connection receives (see `AMQPDelivery.generation`).
    public let generation: UInt64
    /// The node this connection is to (one of `configuration.nodes`).
    public private(set) var node: AMQPEndpoint
    /// The heartbeat timeout agreed with the broker, in seconds (0 = disabled).
    public private(set) var negotiatedHeartbeat: Int = 0

    private static let channel: amqp_channel_t = 1

    private var state: amqp_connection_state_t?
    private var failure: String?
    private var channelOpen = false
    /// True between basic.consume-ok and basic.cancel-ok; selects `amqp_consume_message` for reads.
    private var consuming = false
    private let arena = AMQPCArena()

    /// Connects, logs in and opens channel 1.
    public convenience init(configuration: AMQPConfiguration) throws(AMQPError) {
        try self.init(configuration: configuration, generation: 0)
    }

    /// Tries the configuration's nodes in a random order (so workers spread over a cluster and none keeps waiting
    /// on a dead node first) and keeps the first that accepts; the error lists every node's failure.
    init(configuration: AMQPConfiguration, generation: UInt64) throws(AMQPError) {
        self.configuration = configuration
        self.generation = generation
        self.node = configuration.nodes[0]
        var failures: [String] = []
        for node in configuration.nodes.shuffled() {
            self.node = node
            guard let state = amqp_new_connection() else { throw .connectionFailed("out of memory") }
            self.state = state
            do {
                try openSocket(state)
                try login(state)
                _ = try channelState()
                return
            } catch {
                amqp_destroy_connection(state)
                self.state = nil
                channelOpen = false
                failure = nil
                let reason = Self.asConnectFailure(error)
                guard configuration.nodes.count > 1 else { throw reason }
                failures.append("\(node.host):\(node.port): \(reason)")
            }
        }
        failure = "closed"
        throw .connectionFailed("no node accepted the connection (\(failures.joined(separator: "; ")))")
    }

    deinit {
        close()
    }

    /// False once closed or failed.
    public var isOpen: Bool { state != nil && failure == nil }

    /// Closes the connection (gracefully if it is still healthy). Unacked deliveries are requeued by
    /// the broker. Idempotent.
    public func close() {
        guard let state else { return }
        if failure == nil {
            // Do not let a wedged broker hold the caller for the full RPC timeout.
            var timeout = Self.timeval(seconds: min(configuration.rpcTimeoutSeconds, 2))
            amqp_set_rpc_timeout(state, &timeout)
            if channelOpen {
                _ = amqp_channel_close(state, Self.channel, AMQPMethod.replySuccess)
            }
            _ = amqp_connection_close(state, AMQPMethod.replySuccess)
        }
        amqp_destroy_connection(state)
        self.state = nil
        failure = failure ?? "closed"
    }

    // MARK: - Topology

    /// Declares exchanges, then queues, then bindings.
    public func declare(_ topology: AMQPTopology) throws(AMQPError) {
        for exchange in topology.exchanges { try declareExchange(exchange) }
        for queue in topology.queues { _ = try declareQueue(queue) }
        for binding in topology.bindings { try bind(binding) }
    }

    public func declareExchange(_ exchange: AMQPExchange) throws(AMQPError) {
        let state = try channelState()
        amqp_exchange_declare(state, Self.channel, arena.bytes(exchange.name), arena.bytes(exchange.kind.rawValue),
                              0, exchange.durable ? 1 : 0, exchange.autoDelete ? 1 : 0, 0,
                              arena.table(exchange.arguments))
        try check(amqp_get_rpc_reply(state), "exchange.declare")
    }

    /// Declares `queue` and returns its ready-message and consumer counts. Its `creationArguments` count only when
    /// the queue is new: an existing queue that the broker finds inequivalent in a creation-only argument
    /// (``AMQPQueue/creationOnlyArgumentKeys``) is declared again without them, then passively (see
    /// ``AMQPQueue/creationArguments``).
    @discardableResult
    public func declareQueue(_ queue: AMQPQueue) throws(AMQPError) -> (messages: UInt32, consumers: UInt32) {
        let creationOnly = AMQPQueue.creationOnlyArgumentKeys.union(queue.creationArguments.keys)
        let refusesCreationArgument = { (error: AMQPError) -> Bool in
            guard case .channelClosed(406, let text) = error else { return false }
            return creationOnly.contains { text.contains("'\($0)'") }
        }
        do {
            if !queue.creationArguments.isEmpty {
                do {
                    return try queueDeclare(name: queue.name, passive: false, durable: queue.durable,
                                            arguments: queue.arguments.merging(queue.creationArguments, uniquingKeysWith: { $1 }))
                } catch where refusesCreationArgument(error) {}
            }
            return try queueDeclare(name: queue.name, passive: false, durable: queue.durable, arguments: queue.arguments)
        } catch where refusesCreationArgument(error) {
            return try queueDeclarePassive(queue.name)
        }
    }

    /// Ready-message and consumer counts of an existing queue; `channelClosed(code: 404, ...)` if it does not exist.
    public func queueDeclarePassive(_ name: String) throws(AMQPError) -> (messages: UInt32, consumers: UInt32) {
        try queueDeclare(name: name, passive: true, durable: false, arguments: [:])
    }

    public func bind(_ binding: AMQPBinding) throws(AMQPError) {
        let state = try channelState()
        amqp_queue_bind(state, Self.channel, arena.bytes(binding.queue), arena.bytes(binding.exchange),
                        arena.bytes(binding.routingKey), arena.table(binding.arguments))
        try check(amqp_get_rpc_reply(state), "queue.bind")
    }

    /// Removes all ready messages; returns how many.
    @discardableResult
    public func purge(queue: String) throws(AMQPError) -> UInt32 {
        let state = try channelState()
        let ok = amqp_queue_purge(state, Self.channel, arena.bytes(queue))
        try check(amqp_get_rpc_reply(state), "queue.purge")
        return ok?.pointee.message_count ?? 0
    }

    /// Deletes a queue; returns the number of messages deleted with it.
    @discardableResult
    public func deleteQueue(_ name: String, ifUnused: Bool = false, ifEmpty: Bool = false) throws(AMQPError) -> UInt32 {
        let state = try channelState()
        let ok = amqp_queue_delete(state, Self.channel, arena.bytes(name), ifUnused ? 1 : 0, ifEmpty ? 1 : 0)
        try check(amqp_get_rpc_reply(state), "queue.delete")
        return ok?.pointee.message_count ?? 0
    }

    public func deleteExchange(_ name: String, ifUnused: Bool = false) throws(AMQPError) {
        let state = try channelState()
        amqp_exchange_delete(state, Self.channel, arena.bytes(name), ifUnused ? 1 : 0)
        try check(amqp_get_rpc_reply(state), "exchange.delete")
    }

    // MARK: - Messages

    /// Publishes without waiting for a confirm. Use `AMQPPublisher` for confirmed publishing.
    public func publish(_ message: AMQPOutboundMessage) throws(AMQPError) {
        let state = try channelState()
        var properties = message.properties.encode(into: arena)
        let exchange = arena.bytes(message.exchange)
        let routingKey = arena.bytes(message.routingKey)
        let status = message.body.withUnsafeBytes { body in
            amqp_basic_publish(state, Self.channel, exchange, routingKey, message.mandatory ? 1 : 0, 0, &properties,
                               amqp_bytes_t(len: body.count, bytes: UnsafeMutableRawPointer(mutating: body.baseAddress)))
        }
        guard status == AMQP_STATUS_OK.rawValue else {
            if status == AMQP_STATUS_TABLE_TOO_BIG.rawValue || status == AMQP_STATUS_BAD_AMQP_DATA.rawValue {
                // The method frame may already be on the wire without its header: the connection's
                // framing is no longer trustworthy, so retire it along with the message.
                _ = markFailed("basic.publish: unencodable properties")
                throw .invalidArgument("message properties or headers cannot be encoded (\(Self.statusText(status)))")
            }
            throw markFailed("basic.publish: \(Self.statusText(status))")
        }
    }

    /// `basic.get` with manual acknowledgement; nil when the queue is empty.
    public func get(queue: String) throws(AMQPError) -> AMQPDelivery? {
        let state = try channelState()
        let reply = amqp_basic_get(state, Self.channel, arena.bytes(queue), 0)
        try check(reply, "basic.get")
        if reply.reply.id == AMQPMethod.basicGetEmpty { return nil }
        guard reply.reply.id == AMQPMethod.basicGetOk, let decoded = reply.reply.decoded else {
            throw markFailed("basic.get: unexpected reply method \(reply.reply.id)")
        }
        let ok = decoded.assumingMemoryBound(to: amqp_basic_get_ok_t.self).pointee
        return try readDelivery(
            tag: ok.delivery_tag, redelivered: ok.redelivered != 0,
            exchange: AMQPTableCodec.string(ok.exchange), routingKey: AMQPTableCodec.string(ok.routing_key),
            state: state)
    }

    public func ack(deliveryTag: UInt64, multiple: Bool = false) throws(AMQPError) {
        let state = try channelState()
        try checkStatus(amqp_basic_ack(state, Self.channel, deliveryTag, multiple ? 1 : 0), "basic.ack")
    }

    /// `basic.reject`: on quorum queues a reject counts towards the delivery limit.
    public func reject(deliveryTag: UInt64, requeue: Bool) throws(AMQPError) {
        let state = try channelState()
        try checkStatus(amqp_basic_reject(state, Self.channel, deliveryTag, requeue ? 1 : 0), "basic.reject")
    }

    public func nack(deliveryTag: UInt64, multiple: Bool = false, requeue: Bool) throws(AMQPError) {
        let state = try channelState()
        try checkStatus(amqp_basic_nack(state, Self.channel, deliveryTag, multiple ? 1 : 0, requeue ? 1 : 0),
                        "basic.nack")
    }

    // MARK: - Owner-loop operations (used by AMQPPublisher / AMQPConsumer)

    /// Puts the channel into confirm mode; the broker numbers the following publishes from 1.
    func enableConfirms() throws(AMQPError) {
        let state = try channelState()
        amqp_confirm_select(state, Self.channel)
        try check(amqp_get_rpc_reply(state), "confirm.select")
    }

    /// `basic.qos` + `basic.consume` (manual acks, server-generated tag). Returns the consumer tag.
    @discardableResult
    func startConsuming(queue: String, prefetch: UInt16) throws(AMQPError) -> String {
        let state = try channelState()
        amqp_basic_qos(state, Self.channel, 0, prefetch, 0)
        try check(amqp_get_rpc_reply(state), "basic.qos")
        let ok = amqp_basic_consume(state, Self.channel, arena.bytes(queue), amqp_bytes_t(len: 0, bytes: nil),
                                    0, 0, 0, amqp_table_t(num_entries: 0, entries: nil))
        try check(amqp_get_rpc_reply(state), "basic.consume")
        consuming = true
        return ok.map { AMQPTableCodec.string($0.pointee.consumer_tag) } ?? ""
    }

    /// `basic.cancel`. Deliveries that were already on their way stay readable through `poll()`.
    func cancelConsuming(consumerTag: String) throws(AMQPError) {
        let state = try channelState()
        amqp_basic_cancel(state, Self.channel, arena.bytes(consumerTag))
        try check(amqp_get_rpc_reply(state), "basic.cancel")
        consuming = false
    }

    /// Reads at most one frame without blocking (services heartbeats); nil if none is complete yet.
    ///
    /// While consuming this uses `amqp_consume_message`, which answers
    /// `AMQP_STATUS_UNEXPECTED_STATE` for any frame other than `basic.deliver`; that frame is then
    /// read with `amqp_simple_wait_frame_noblock` and dispatched, as rabbitmq-c's
    /// `examples/amqp_consumer.c` does.
    func poll() throws(AMQPError) -> AMQPIncomingFrame? {
        let state = try liveState()
        amqp_maybe_release_buffers(state)
        var noWait = Self.timeval(seconds: 0)
        if consuming {
            var envelope = amqp_envelope_t()
            let reply = amqp_consume_message(state, &envelope, &noWait, 0)
            if reply.reply_type == AMQP_RESPONSE_NORMAL {
                defer { amqp_destroy_envelope(&envelope) }
                return .delivery(AMQPDelivery(
                    body: AMQPTableCodec.bytes(envelope.message.body),
                    properties: AMQPProperties(envelope.message.properties),
                    exchange: AMQPTableCodec.string(envelope.exchange),
                    routingKey: AMQPTableCodec.string(envelope.routing_key),
                    redelivered: envelope.redelivered != 0,
                    deliveryTag: envelope.delivery_tag,
                    generation: generation,
                    userId: AMQPProperties.userId(envelope.message.properties)))
            }
            if reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION {
                if reply.library_error == AMQP_STATUS_TIMEOUT.rawValue { return nil }
                if reply.library_error != AMQP_STATUS_UNEXPECTED_STATE.rawValue {
                    try check(reply, "consume")
                }
            } else {
                try check(reply, "consume")
            }
        }
        var frame = amqp_frame_t()
        let status = amqp_simple_wait_frame_noblock(state, &frame, &noWait)
        if status == AMQP_STATUS_TIMEOUT.rawValue { return nil }
        try checkStatus(status, "reading frames")
        return try dispatch(frame, state: state)
    }

    /// True when rabbitmq-c already holds input, so `poll()` can make progress without the socket
    /// becoming readable.
    var hasBufferedInput: Bool {
        guard let state, failure == nil else { return false }
        return amqp_frames_enqueued(state) != 0 || amqp_data_in_buffer(state) != 0
    }

    /// The socket, for `poll(2)` by the owner loop; -1 when closed.
    var socketDescriptor: Int32 {
        guard let state else { return -1 }
        return amqp_get_sockfd(state)
    }

    #if DEBUG
    /// Test-only fault injection (debug builds only): kills the TCP stream like a network failure would.
    func simulateNetworkFailure() {
        let descriptor = socketDescriptor
        if descriptor >= 0 { _ = shutdown(descriptor, Int32(SHUT_RDWR)) }
    }
    #endif

    // MARK: - Internals

    func queueDeclare(name: String, passive: Bool, durable: Bool,
                              arguments: [String: AMQPFieldValue]) throws(AMQPError) -> (messages: UInt32, consumers: UInt32) {
        let state = try channelState()
        let ok = amqp_queue_declare(state, Self.channel, arena.bytes(name), passive ? 1 : 0, durable ? 1 : 0, 0, 0,
                                    arena.table(arguments))
        try check(amqp_get_rpc_reply(state), passive ? "queue.declare (passive)" : "queue.declare")
        guard let ok else { return (0, 0) }
        return (ok.pointee.message_count, ok.pointee.consumer_count)
    }

    private func dispatch(_ frame: amqp_frame_t, state: amqp_connection_state_t) throws(AMQPError) -> AMQPIncomingFrame {
        guard frame.frame_type == UInt8(AMQP_FRAME_METHOD), let decoded = frame.payload.method.decoded else {
            return .ignored
        }
        switch frame.payload.method.id {
        case AMQPMethod.basicAck:
            let ack = decoded.assumingMemoryBound(to: amqp_basic_ack_t.self).pointee
            return .ack(deliveryTag: ack.delivery_tag, multiple: ack.multiple != 0)
        case AMQPMethod.basicNack:
            let nack = decoded.assumingMemoryBound(to: amqp_basic_nack_t.self).pointee
            return .nack(deliveryTag: nack.delivery_tag, multiple: nack.multiple != 0)
        case AMQPMethod.basicReturn:
            let returned = decoded.assumingMemoryBound(to: amqp_basic_return_t.self).pointee
            let replyText = AMQPTableCodec.string(returned.reply_text)
            let exchange = AMQPTableCodec.string(returned.exchange)
            let routingKey = AMQPTableCodec.string(returned.routing_key)
            // The returned content (header + body frames) follows and must be consumed.
            let body = try readMessage(channel: frame.channel, state: state) { message in
                AMQPTableCodec.bytes(message.body)
            }
            return .returned(AMQPReturnedMessage(replyCode: Int(returned.reply_code), replyText: replyText,
                                                 exchange: exchange, routingKey: routingKey, body: body))
        case AMQPMethod.basicDeliver:
            // Deliveries that race a basic.cancel arrive after `consuming` was cleared.
            let deliver = decoded.assumingMemoryBound(to: amqp_basic_deliver_t.self).pointee
            return .delivery(try readDelivery(
                tag: deliver.delivery_tag, redelivered: deliver.redelivered != 0,
                exchange: AMQPTableCodec.string(deliver.exchange),
                routingKey: AMQPTableCodec.string(deliver.routing_key), state: state))
        case AMQPMethod.basicCancel:
            consuming = false
            return .consumerCancelled
        case AMQPMethod.channelClose, AMQPMethod.connectionClose:
            throw serverException(frame.payload.method)
        default:
            return .ignored
        }
    }

    private func readDelivery(tag: UInt64, redelivered: Bool, exchange: String, routingKey: String,
                              state: amqp_connection_state_t) throws(AMQPError) -> AMQPDelivery {
        try readMessage(channel: Self.channel, state: state) { message in
            AMQPDelivery(body: AMQPTableCodec.bytes(message.body), properties: AMQPProperties(message.properties),
                         exchange: exchange, routingKey: routingKey, redelivered: redelivered,
                         deliveryTag: tag, generation: generation, userId: AMQPProperties.userId(message.properties))
        }
    }

    /// Reads the content frames following a method and lets `body` copy what it needs before the
    /// C message is freed.
    private func readMessage<T>(channel: amqp_channel_t, state: amqp_connection_state_t,
                                _ body: (amqp_message_t) -> T) throws(AMQPError) -> T {
        var message = amqp_message_t()
        try check(amqp_read_message(state, channel, &message, 0), "reading message content")
        defer { amqp_destroy_message(&message) }
        return body(message)
    }

    private func openSocket(_ state: amqp_connection_state_t) throws(AMQPError) {
        let socket: OpaquePointer?
        if let tls = configuration.tls {
            socket = amqp_ssl_socket_new(state)
            guard let socket else { throw .connectionFailed("cannot create a TLS socket") }
            amqp_ssl_socket_set_verify_peer(socket, tls.verifyPeer ? 1 : 0)
            amqp_ssl_socket_set_verify_hostname(socket, tls.verifyHostname ? 1 : 0)
            if tls.verifyPeer || tls.caCertificatePath != nil {
                let caFile = tls.caCertificatePath ?? AMQPTLSOptions.systemCACertificatePath
                guard amqp_ssl_socket_set_cacert(socket, caFile) == AMQP_STATUS_OK.rawValue else {
                    throw .connectionFailed("cannot load CA certificates from \(caFile)")
                }
            }
            switch (tls.clientCertificatePath, tls.clientKeyPath) {
            case (let certificate?, let key?):
                guard amqp_ssl_socket_set_key(socket, certificate, key) == AMQP_STATUS_OK.rawValue else {
                    throw .connectionFailed("cannot load client certificate \(certificate) / key \(key)")
                }
            case (nil, nil):
                break
            default:
                throw .connectionFailed("a client certificate needs both clientCertificatePath and clientKeyPath")
            }
        } else {
            socket = amqp_tcp_socket_new(state)
            guard socket != nil else { throw .connectionFailed("cannot create a TCP socket") }
        }
        var timeout = Self.timeval(seconds: configuration.connectTimeoutSeconds)
        let status = amqp_socket_open_noblock(socket, node.host, Int32(node.port), &timeout)
        guard status == AMQP_STATUS_OK.rawValue else {
            if let tls = configuration.tls, (_AMQP_STATUS_SSL_NEXT_VALUE.rawValue + 1...AMQP_STATUS_SSL_ERROR.rawValue).contains(status) {
                // rabbitmq-c's texts ("SSL peer cert verification failed") do not say what to check; this does.
                throw .connectionFailed(
                    "TLS handshake with \(node.host):\(node.port) failed: \(Self.statusText(status)); the broker's certificate must chain to a CA in \(tls.caCertificatePath ?? AMQPTLSOptions.systemCACertificatePath) (cacertfile) and name the host \(node.host)")
            }
            throw .connectionFailed("cannot connect to \(node.host):\(node.port): \(Self.statusText(status))")
        }
        Self.tuneSocket(amqp_get_sockfd(state))
        amqp_set_handshake_timeout(state, &timeout)
        var rpcTimeout = Self.timeval(seconds: configuration.rpcTimeoutSeconds)
        amqp_set_rpc_timeout(state, &rpcTimeout)
    }

    private func login(_ state: amqp_connection_state_t) throws(AMQPError) {
        // consumer_cancel_notify: be told (basic.cancel) when our queue is deleted, instead of idling forever.
        var properties = arena.table([
            "connection_name": .string(configuration.connectionName),
            "capabilities": ["consumer_cancel_notify": true],
        ])
        let reply = paypipe_amqp_login_plain_with_properties(
            state, configuration.vhost, 0, AMQPMethod.defaultFrameSize, Int32(clamping: configuration.heartbeatSeconds),
            &properties, configuration.user, configuration.password)
        arena.reset()
        try check(reply, "login")
        negotiatedHeartbeat = Int(amqp_get_heartbeat(state))
    }

    private func liveState() throws(AMQPError) -> amqp_connection_state_t {
        guard let state else { throw .closed }
        if let failure { throw .connectionClosed(failure) }
        return state
    }

    /// The connection state with channel 1 open (reopened after a channel exception) and the arena
    /// recycled for the coming call.
    private func channelState() throws(AMQPError) -> amqp_connection_state_t {
        let state = try liveState()
        amqp_maybe_release_buffers(state)
        arena.reset()
        if !channelOpen {
            amqp_channel_open(state, Self.channel)
            try check(amqp_get_rpc_reply(state), "channel.open")
            channelOpen = true
        }
        return state
    }

    private func check(_ reply: amqp_rpc_reply_t, _ context: String) throws(AMQPError) {
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            return
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            throw serverException(reply.reply)
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            throw markFailed("\(context): \(Self.statusText(reply.library_error))")
        default:
            throw markFailed("\(context): connection closed by the broker")
        }
    }

    private func checkStatus(_ status: Int32, _ context: String) throws(AMQPError) {
        guard status != AMQP_STATUS_OK.rawValue else { return }
        throw markFailed("\(context): \(Self.statusText(status))")
    }

    /// Answers a broker-initiated close (so the broker does not wait for its close-ok) and maps it to an error.
    private func serverException(_ method: amqp_method_t) -> AMQPError {
        guard let state, let decoded = method.decoded else { return markFailed("broker exception without details") }
        switch method.id {
        case AMQPMethod.channelClose:
            let close = decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
            let error = AMQPError.channelClosed(code: Int(close.reply_code),
                                                text: AMQPTableCodec.string(close.reply_text))
            var closeOk = amqp_channel_close_ok_t()
            channelOpen = false
            consuming = false
            if amqp_send_method(state, Self.channel, AMQPMethod.channelCloseOk, &closeOk) != AMQP_STATUS_OK.rawValue {
                return markFailed("channel closed by broker and close-ok failed: \(error)")
            }
            return error
        case AMQPMethod.connectionClose:
            let close = decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
            var closeOk = amqp_connection_close_ok_t()
            _ = amqp_send_method(state, 0, AMQPMethod.connectionCloseOk, &closeOk)
            return markFailed("closed by broker: \(close.reply_code) \(AMQPTableCodec.string(close.reply_text))")
        default:
            return markFailed("unexpected broker method \(method.id)")
        }
    }

    /// Records that the connection can no longer be used and returns the matching error.
    private func markFailed(_ reason: String) -> AMQPError {
        if failure == nil { failure = reason }
        return .connectionClosed(reason)
    }

    private static func asConnectFailure(_ error: AMQPError) -> AMQPError {
        switch error {
        case .connectionClosed(let reason): .connectionFailed(reason)
        case .channelClosed(let code, let text): .connectionFailed("\(code) \(text)")
        default: error
        }
    }

    /// TCP keep-alive detects a dead peer even when heartbeats are disabled (tool connections).
    /// TCP_NODELAY (which rabbitmq-c 0.11 already sets) is asserted because single acks and
    /// confirms must leave immediately rather than wait for the broker's delayed ACK.
    private static func tuneSocket(_ descriptor: Int32) {
        guard descriptor >= 0 else { return }
        var one: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, size)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_KEEPALIVE, &one, size)
    }

    private static func statusText(_ status: Int32) -> String {
        String(cString: amqp_error_string2(status))
    }

    private static func timeval(seconds: Double) -> Glibc.timeval {
        let clamped = max(0, min(seconds, 86_400))
        let whole = clamped.rounded(.down)
        return Glibc.timeval(tv_sec: Int(whole), tv_usec: Int((clamped - whole) * 1_000_000))
    }
}

@available(*, unavailable, message: "an AMQPConnection must stay on the thread that owns it")
extension AMQPConnection: Sendable {}

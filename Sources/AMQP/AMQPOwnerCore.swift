/// What a connection's owner thread needs from the state it shares with its facade (publisher or
/// consumer): the connection settings, where to report events, and the pipe that wakes it.
protocol AMQPOwnerCore: Sendable {
    var configuration: AMQPConfiguration { get }
    var onEvent: @Sendable (AMQPEvent) -> Void { get }
    var wakeup: AMQPWakeup { get }
}

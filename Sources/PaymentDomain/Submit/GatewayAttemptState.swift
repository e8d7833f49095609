/// The state of one gateway attempt (`gateway_attempts.state`), as the submit protocol reasons about it.
public enum GatewayAttemptState: String, Sendable {
    /// Committed before the call: the request may be on the wire. Found on redelivery, it means a crash
    /// between sending and recording, so the gateway must be queried before anything is resent.
    case sending
    case completed
    /// Sent, but no trustworthy answer: to be resolved by the connector's status query.
    case uncertain
    /// Known not to have been processed: the request may be sent again.
    case notSent = "not_sent"
}

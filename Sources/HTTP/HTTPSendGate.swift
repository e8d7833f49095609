/// The peer a transfer is connected to, as libcurl reports it once the connection (and TLS) is up.
public struct HTTPConnectedPeer: Sendable, Equatable {
    /// The numeric address actually connected to (`CURLINFO_PRIMARY_IP`), e.g. `127.0.0.1` or `::1`.
    public let ip: String
    public let port: Int

    public init(ip: String, port: Int) {
        self.ip = ip
        self.port = port
    }
}

/// A last check right before the request bytes leave: libcurl calls it after the connection is made and before
/// anything of the request is written (`CURLOPT_PREREQFUNCTION`).
///
/// It is the one place where two decisions that must not be taken earlier are taken: whether the *connected*
/// address is allowed (a name resolved twice can answer differently the second time: DNS rebinding), and whether the
/// request is still fresh enough to send (a payment call that waited too long in a pool must not leave at all).
/// Refusing here is certain not to have sent anything, so the caller may re-plan freely.
public struct HTTPSendGate: Sendable {
    /// Returns nil to let the request go, or the reason it must not (no secrets: it becomes the error text).
    public let check: @Sendable (HTTPConnectedPeer) -> String?

    public init(_ check: @escaping @Sendable (HTTPConnectedPeer) -> String?) {
        self.check = check
    }

    /// Both gates must allow the request; the first refusal wins.
    public func and(_ other: HTTPSendGate) -> HTTPSendGate {
        HTTPSendGate { peer in check(peer) ?? other.check(peer) }
    }
}

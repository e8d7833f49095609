/// TLS settings for `amqps://` connections (rabbitmq-c's OpenSSL socket).
///
/// Verification is on by default: a payment pipeline must not talk to an unauthenticated broker.
public struct AMQPTLSOptions: Sendable, Equatable {
    /// PEM file with the CA(s) to trust. `nil` uses the system bundle (`systemCACertificatePath`),
    /// because rabbitmq-c 0.11 does not load OpenSSL's default verify paths itself.
    public var caCertificatePath: String?
    /// Verify the broker's certificate chain.
    public var verifyPeer: Bool
    /// Verify that the broker's certificate matches the host name of the URL.
    public var verifyHostname: Bool
    /// Client certificate chain (PEM) for mutual TLS; must be set together with `clientKeyPath`.
    public var clientCertificatePath: String?
    /// Unencrypted PEM private key for `clientCertificatePath` (rabbitmq-c 0.11 cannot prompt for passwords).
    public var clientKeyPath: String?

    /// Debian's CA bundle (package `ca-certificates`).
    public static let systemCACertificatePath = "/etc/ssl/certs/ca-certificates.crt"

    public init(
        caCertificatePath: String? = nil,
        verifyPeer: Bool = true,
        verifyHostname: Bool = true,
        clientCertificatePath: String? = nil,
        clientKeyPath: String? = nil
    ) {
        self.caCertificatePath = caCertificatePath
        self.verifyPeer = verifyPeer
        self.verifyHostname = verifyHostname
        self.clientCertificatePath = clientCertificatePath
        self.clientKeyPath = clientKeyPath
    }
}

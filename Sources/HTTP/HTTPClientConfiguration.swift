/// Settings applied to every request of one `HTTPClient`.
///
/// Defaults are the safe ones for talking to a payment gateway: certificate verification on, no redirects (a
/// redirected POST must not be silently replayed elsewhere), bounded time and response size.
public struct HTTPClientConfiguration: Sendable {
    /// Seconds allowed for DNS + TCP + TLS set-up.
    public var connectTimeout: Double
    /// Seconds allowed for the whole transfer, connection set-up included.
    public var totalTimeout: Double
    /// Follow 3xx responses (at most `maxRedirects`, http/https only). Off by default: a 3xx is returned as is.
    public var followRedirects: Bool
    public var maxRedirects: Int
    /// PEM file of CA certificates to trust instead of the system store (private CAs, pinning a gateway's CA).
    public var caCertificatePath: String?
    /// Verify the server certificate chain and host name. Only ever disable against a local test server.
    public var verifyPeer: Bool
    /// Responses whose body would exceed this many bytes fail with `HTTPClientError.tooLarge`.
    public var maxResponseBytes: Int
    /// PEM certificate (chain) presented for mutual TLS, with `clientKeyPath` (an unencrypted PEM key): Apple's
    /// merchant-token API. Both or neither; a client carries one identity, so connections it reuses never mix two.
    public var clientCertificatePath: String?
    public var clientKeyPath: String?

    public init(
        connectTimeout: Double = 5,
        totalTimeout: Double = 15,
        followRedirects: Bool = false,
        maxRedirects: Int = 5,
        caCertificatePath: String? = nil,
        verifyPeer: Bool = true,
        maxResponseBytes: Int = 1 << 20,
        clientCertificatePath: String? = nil,
        clientKeyPath: String? = nil
    ) {
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.followRedirects = followRedirects
        self.maxRedirects = maxRedirects
        self.caCertificatePath = caCertificatePath
        self.verifyPeer = verifyPeer
        self.maxResponseBytes = maxResponseBytes
        self.clientCertificatePath = clientCertificatePath
        self.clientKeyPath = clientKeyPath
    }
}

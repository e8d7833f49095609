import Crypto

/// A certificate together with its private key (one node of the sandbox PKI).
public struct SandboxCertifiedKey: Sendable {
    public let certificate: Certificate
    public let privateKey: PrivateKey

    public init(certificate: Certificate, privateKey: PrivateKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }
}

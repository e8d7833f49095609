import ApplePay

/// A sandbox merchant payment-processing identity, with the PEM texts (and file paths when persisted) an operator
/// needs to configure the keyring.
public struct SandboxMerchant: Sendable {
    public let merchantIdentifier: String
    public let identity: MerchantIdentity
    public let certificatePEM: String
    public let privateKeyPEM: String
    /// Where the certificate/key were written, when the PKI lives in a directory.
    public let certificatePath: String?
    public let privateKeyPath: String?
}

import Crypto

/// One Apple Pay payment-processing identity of a merchant: the certificate Apple issued and its private key.
///
/// Everything a token needs is derived once here (publicKeyHash, merchant identifier hash, parsed key) so that
/// decrypting does no PEM/X.509 work.
public struct MerchantIdentity: Sendable {
    public let certificate: Certificate
    public let privateKey: PrivateKey
    /// SHA-256 of the certificate's SubjectPublicKeyInfo DER: what tokens carry as `header.publicKeyHash`.
    public let publicKeyHash: [UInt8]
    /// SHA-256(merchant identifier), read from extension 1.2.840.113635.100.6.32 (used as KDF PartyVInfo).
    public let merchantIdentifierHash: [UInt8]
    public var keyType: KeyType { privateKey.type }

    public init(certificatePEM: String, privateKeyPEM: String) throws(ApplePayError) {
        let certificate: Certificate
        let privateKey: PrivateKey
        do {
            certificate = try Certificate(pem: certificatePEM)
        } catch {
            throw .merchantIdentityInvalid("merchant certificate is not a PEM certificate")
        }
        do {
            privateKey = try PrivateKey(pem: privateKeyPEM)
        } catch {
            throw .merchantIdentityInvalid("merchant private key is not a PEM private key")
        }
        try self.init(certificate: certificate, privateKey: privateKey)
    }

    public init(certificate: Certificate, privateKey: PrivateKey) throws(ApplePayError) {
        guard certificate.publicKey.matches(privateKey.publicKey) else {
            throw .merchantIdentityInvalid("merchant private key does not match the certificate")
        }
        switch privateKey.type {
        case .ec:
            guard privateKey.curveName == "prime256v1" else { throw .merchantIdentityInvalid("EC merchant keys must be P-256") }
        case .rsa:
            guard privateKey.bits >= 2048 else { throw .merchantIdentityInvalid("RSA merchant keys must have at least 2048 bits") }
        }
        guard let spki = try? certificate.publicKey.subjectPublicKeyInfoDER() else {
            throw .merchantIdentityInvalid("merchant certificate public key cannot be encoded")
        }
        self.certificate = certificate
        self.privateKey = privateKey
        self.publicKeyHash = SHA256.hash(spki)
        self.merchantIdentifierHash = try Self.merchantIdentifierHash(of: certificate)
    }

    /// Parses the extension value as a DER string (UTF8String, or IA5/PrintableString for robustness) of 64 hex
    /// characters and decodes it, instead of slicing a fixed 2-byte header off.
    public static func merchantIdentifierHash(of certificate: Certificate) throws(ApplePayError) -> [UInt8] {
        guard let value = certificate.extensionValue(ApplePayOID.merchantIdentifier) else {
            throw .merchantIdentityInvalid("merchant certificate lacks the merchant identifier extension 1.2.840.113635.100.6.32")
        }
        guard let element = try? DERReader.parse(value),
            [ASN1Tag.utf8String, ASN1Tag.ia5String, ASN1Tag.printableString].contains(element.tag),
            let hash = Hex.decode(String(decoding: element.content, as: UTF8.self)), hash.count == 32
        else {
            throw .merchantIdentityInvalid("merchant identifier extension is not a string of 64 hex characters")
        }
        return hash
    }
}

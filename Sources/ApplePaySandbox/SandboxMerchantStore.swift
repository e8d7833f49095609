import ApplePay
import Crypto
import Foundation
import Synchronization

/// Creates sandbox merchant identities on first use (persisting them when the PKI has a directory) and hands out the
/// same identity afterwards, so tokens minted for a merchant id always fit the keyring configured for it.
final class SandboxMerchantStore: Sendable {
    private let merchants = Mutex<[String: SandboxMerchant]>([:])
    private let directory: String?
    private let issuer: SandboxCertifiedKey

    init(directory: String?, issuer: SandboxCertifiedKey) {
        self.directory = directory
        self.issuer = issuer
    }

    func merchant(_ merchantIdentifier: String, keyType: KeyType) throws -> (merchant: SandboxMerchant, created: Bool) {
        let cacheKey = "\(keyType)|\(merchantIdentifier)"
        return try merchants.withLock { merchants in
            if let known = merchants[cacheKey] { return (known, false) }
            let (merchant, created) = try loadOrCreate(merchantIdentifier, keyType: keyType)
            merchants[cacheKey] = merchant
            return (merchant, created)
        }
    }

    private func loadOrCreate(_ merchantIdentifier: String, keyType: KeyType) throws -> (SandboxMerchant, Bool) {
        let paths = directory.map { directory in
            let folder = "\(directory)/merchants/\(Self.safeName(merchantIdentifier))"
            return (folder: folder, certificate: "\(folder)/\(keyType).cert.pem", key: "\(folder)/\(keyType).key.pem")
        }
        if let paths, FileManager.default.fileExists(atPath: paths.certificate), FileManager.default.fileExists(atPath: paths.key) {
            let certificatePEM = try SandboxFiles.read(paths.certificate)
            let keyPEM = try SandboxFiles.read(paths.key)
            let identity = try MerchantIdentity(certificatePEM: certificatePEM, privateKeyPEM: keyPEM)
            guard identity.merchantIdentifierHash == SHA256.hash(Array(merchantIdentifier.utf8)) else {
                throw SandboxPKIError.fileSystem("\(paths.certificate) belongs to another merchant identifier")
            }
            return (SandboxMerchant(merchantIdentifier: merchantIdentifier, identity: identity, certificatePEM: certificatePEM,
                                    privateKeyPEM: keyPEM, certificatePath: paths.certificate, privateKeyPath: paths.key), false)
        }
        let key = try keyType == .ec ? PrivateKey.generateP256() : PrivateKey.generateRSA(bits: 2048)
        let merchantIdHex = Hex.encode(SHA256.hash(Array(merchantIdentifier.utf8))).uppercased()
        let certificate = try SandboxPKI.issue(
            commonName: "Apple Pay Payment Processing:\(merchantIdentifier) (PayPipe sandbox)", key: key.publicKey,
            issuer: issuer, certificateAuthority: false,
            extensions: [CertificateExtension(ApplePayOID.merchantIdentifier, valueDER: DERWriter.utf8String(merchantIdHex))])
        let identity = try MerchantIdentity(certificate: certificate, privateKey: key)
        let certificatePEM = try certificate.pem()
        let keyPEM = try key.pkcs8PEM()
        if let paths {
            try SandboxFiles.makeDirectory(paths.folder)
            try SandboxFiles.write(certificatePEM, to: paths.certificate, secret: false)
            try SandboxFiles.write(keyPEM, to: paths.key, secret: true)
        }
        return (SandboxMerchant(merchantIdentifier: merchantIdentifier, identity: identity, certificatePEM: certificatePEM,
                                privateKeyPEM: keyPEM, certificatePath: paths?.certificate, privateKeyPath: paths?.key), true)
    }

    /// A directory name for a merchant identifier (letters, digits, '.', '-', '_'; anything else becomes '_').
    static func safeName(_ merchantIdentifier: String) -> String {
        String(merchantIdentifier.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" })
    }
}

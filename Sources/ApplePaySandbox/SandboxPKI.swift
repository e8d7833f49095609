import ApplePay
import Crypto
import Foundation

/// A local stand-in for Apple's token-signing PKI, for sandbox runs and tests.
///
/// Root → intermediate (marker OID 1.2.840.113635.100.6.2.14) → EC P-256 and RSA-2048 leaves (marker OID
/// 1.2.840.113635.100.6.29), plus merchant payment-processing identities (EC P-256 and RSA-2048, extension
/// 1.2.840.113635.100.6.32) created per merchant identifier on first use. Tokens it mints pass every check of
/// `ApplePayDecryptor` once its root is configured as the trust root — which production never does: the default is
/// the pinned Apple root, and the sandbox root must be given explicitly (PAYPIPE_APPLEPAY_TRUST_ROOT).
public struct SandboxPKI: Sendable {
    public let root: SandboxCertifiedKey
    public let intermediate: SandboxCertifiedKey
    public let ecLeaf: SandboxCertifiedKey
    public let rsaLeaf: SandboxCertifiedKey
    /// The directory the PKI is persisted in, if any.
    public let directory: String?
    /// Files written when this value was created (empty when everything was loaded).
    public let createdFiles: [String]
    private let merchants: SandboxMerchantStore

    /// The root as a trust anchor for `ApplePayVerifierConfiguration`.
    public var trustRoot: TrustRoot { TrustRoot(certificate: root.certificate) }

    /// A fresh PKI kept in memory only.
    public static func generate() throws -> SandboxPKI {
        let nodes = try makeNodes()
        return SandboxPKI(nodes: nodes, directory: nil, createdFiles: [])
    }

    /// Loads the PKI from `directory`, creating (and persisting) it the first time.
    public static func loadOrCreate(directory: String) throws -> SandboxPKI {
        let names = ["root", "intermediate", "leaf-ec", "leaf-rsa"]
        let files = names.map { ("\(directory)/\($0).cert.pem", "\(directory)/\($0).key.pem") }
        if files.allSatisfy({ FileManager.default.fileExists(atPath: $0.0) && FileManager.default.fileExists(atPath: $0.1) }) {
            var nodes: [SandboxCertifiedKey] = []
            for (certificatePath, keyPath) in files {
                nodes.append(SandboxCertifiedKey(
                    certificate: try Certificate(pem: SandboxFiles.read(certificatePath)),
                    privateKey: try PrivateKey(pem: SandboxFiles.read(keyPath))))
            }
            return SandboxPKI(nodes: nodes, directory: directory, createdFiles: [])
        }
        try SandboxFiles.makeDirectory(directory)
        let nodes = try makeNodes()
        var created: [String] = []
        for (node, (certificatePath, keyPath)) in zip(nodes, files) {
            try SandboxFiles.write(try node.certificate.pem(), to: certificatePath, secret: false)
            try SandboxFiles.write(try node.privateKey.pkcs8PEM(), to: keyPath, secret: true)
            created += [certificatePath, keyPath]
        }
        return SandboxPKI(nodes: nodes, directory: directory, createdFiles: created)
    }

    private init(nodes: [SandboxCertifiedKey], directory: String?, createdFiles: [String]) {
        self.root = nodes[0]
        self.intermediate = nodes[1]
        self.ecLeaf = nodes[2]
        self.rsaLeaf = nodes[3]
        self.directory = directory
        self.createdFiles = createdFiles
        self.merchants = SandboxMerchantStore(directory: directory, issuer: nodes[0])
    }

    private static func makeNodes() throws -> [SandboxCertifiedKey] {
        let rootKey = try PrivateKey.generateP256()
        let root = SandboxCertifiedKey(
            certificate: try issue(commonName: "PayPipe Sandbox Root CA", key: rootKey.publicKey, issuer: nil, signingKey: rootKey,
                                   certificateAuthority: true, extensions: []),
            privateKey: rootKey)
        let intermediateKey = try PrivateKey.generateP256()
        let intermediate = SandboxCertifiedKey(
            certificate: try issue(
                commonName: "PayPipe Sandbox Application Integration CA", key: intermediateKey.publicKey, issuer: root,
                certificateAuthority: true, extensions: [CertificateExtension(ApplePayOID.intermediateMarker, valueDER: DERWriter.null)]),
            privateKey: intermediateKey)
        let leafMarker = CertificateExtension(ApplePayOID.leafMarker, valueDER: DERWriter.null)
        let ecKey = try PrivateKey.generateP256()
        let ecLeaf = SandboxCertifiedKey(
            certificate: try issue(commonName: "ecc-smp-broker-sign (PayPipe sandbox)", key: ecKey.publicKey, issuer: intermediate,
                                   certificateAuthority: false, extensions: [leafMarker]),
            privateKey: ecKey)
        let rsaKey = try PrivateKey.generateRSA(bits: 2048)
        let rsaLeaf = SandboxCertifiedKey(
            certificate: try issue(commonName: "rsa-smp-broker-sign (PayPipe sandbox)", key: rsaKey.publicKey, issuer: intermediate,
                                   certificateAuthority: false, extensions: [leafMarker]),
            privateKey: rsaKey)
        return [root, intermediate, ecLeaf, rsaLeaf]
    }

    /// Issues a certificate valid from one day ago for ten years, or until `notAfter` (CA certificates get
    /// basicConstraints cA=TRUE). Public so tests can build deliberately wrong chains (missing marker OIDs, foreign
    /// roots) and certificates about to expire.
    public static func issue(
        commonName: String, key: PublicKey, issuer: SandboxCertifiedKey?, signingKey: PrivateKey? = nil,
        certificateAuthority: Bool, extensions: [CertificateExtension], notAfter: Date? = nil
    ) throws -> Certificate {
        let now = Date()
        var all = extensions
        if certificateAuthority { all.insert(.basicConstraints(certificateAuthority: true), at: 0) }
        let builder = CertificateBuilder(
            subjectCommonName: commonName, subjectPublicKey: key, notBefore: now.addingTimeInterval(-86_400),
            notAfter: notAfter ?? now.addingTimeInterval(10 * 365 * 86_400), extensions: all)
        guard let signer = signingKey ?? issuer?.privateKey else { throw SandboxPKIError.crypto("no signing key") }
        return try builder.sign(issuer: issuer?.certificate, issuerKey: signer)
    }

    /// The sandbox identity for a merchant identifier (created, and persisted with a directory, on first use).
    public func merchant(_ merchantIdentifier: String, keyType: KeyType) throws -> SandboxMerchant {
        try merchants.merchant(merchantIdentifier, keyType: keyType).merchant
    }

    /// Like `merchant(_:keyType:)`, also telling whether the identity was just created.
    public func merchantCreatingIfNeeded(_ merchantIdentifier: String, keyType: KeyType) throws -> (merchant: SandboxMerchant, created: Bool) {
        try merchants.merchant(merchantIdentifier, keyType: keyType)
    }

    /// Mints a `PKPaymentToken` JSON for the merchant's sandbox identity.
    public func mintToken(
        version: ApplePayToken.Version, merchantIdentifier: String, amount: Int64, currencyNumeric: String,
        pan: String, expiry: String, cryptogram: String, eci: String?, signingTime: Date, applicationData: [UInt8]?
    ) throws -> [UInt8] {
        try mintToken(SandboxMintRequest(
            version: version, merchantIdentifier: merchantIdentifier, amount: amount, currencyNumeric: currencyNumeric,
            pan: pan, expiry: expiry, cryptogram: cryptogram, eci: eci, signingTime: signingTime,
            applicationData: applicationData))
    }

    /// Mints a `PKPaymentToken` JSON following applepay-token.md §1–§4, with the request's deliberate defects.
    public func mintToken(_ request: SandboxMintRequest) throws -> [UInt8] {
        let merchant = try request.merchant
            ?? self.merchant(request.merchantIdentifier, keyType: request.version == .ecV1 ? .ec : .rsa)
        let merchantKey = merchant.identity.certificate.publicKey
        let plaintext = try request.plaintextOverride ?? Self.paymentDataJSON(request)
        var header: [String: Any] = [
            "publicKeyHash": Data(merchant.identity.publicKeyHash).base64EncodedString(),
            "transactionId": Hex.encode(request.transactionId),
        ]
        let key: [UInt8]
        let keyMaterial: [UInt8]
        switch request.version {
        case .ecV1:
            let ephemeral = try PrivateKey.generateP256()
            key = ApplePayDecryptor.derivedKey(
                sharedSecret: try ephemeral.sharedSecret(with: merchantKey),
                merchantIdentifierHash: merchant.identity.merchantIdentifierHash)
            keyMaterial = try ephemeral.publicKey.subjectPublicKeyInfoDER()
            header["ephemeralPublicKey"] = Data(keyMaterial).base64EncodedString()
        case .rsaV1:
            key = SecureRandom.bytes(count: 16)
            keyMaterial = try merchantKey.encryptOAEP(key)
            header["wrappedKey"] = Data(keyMaterial).base64EncodedString()
        }
        let sealed = try AESGCM.seal(key: key, nonce: [UInt8](repeating: 0, count: 16), plaintext: plaintext)
        var data = sealed.ciphertext + sealed.tag
        if request.corruptCiphertext { data[0] ^= 0x01 }
        let applicationDataHash = request.applicationData.map { SHA256.hash($0) }
        if let applicationDataHash { header["applicationData"] = Hex.encode(applicationDataHash) }
        let signer = request.signer ?? (request.version == .ecV1 ? ecLeaf : rsaLeaf)
        let signature = try SandboxSignature.make(
            signedBytes: keyMaterial + data + request.transactionId + (applicationDataHash ?? []), signer: signer,
            certificates: request.embeddedCertificates ?? [signer.certificate, intermediate.certificate],
            signingTime: request.omitSigningTime ? nil : request.signingTime,
            declaredAlgorithm: request.declaredSignatureAlgorithm, corrupt: request.corruptSignature)
        let token: [String: Any] = [
            "paymentData": [
                "version": request.version.rawValue, "data": Data(data).base64EncodedString(),
                "signature": Data(signature).base64EncodedString(), "header": header,
            ],
            "paymentMethod": ["displayName": "Visa \(request.pan.suffix(4))", "network": "Visa", "type": "debit"],
            "transactionIdentifier": Hex.encode(request.transactionId).uppercased(),
        ]
        return Array(try JSONSerialization.data(withJSONObject: token, options: [.sortedKeys, .withoutEscapingSlashes]))
    }

    static func paymentDataJSON(_ request: SandboxMintRequest) throws -> [UInt8] {
        let payload = DecryptedPaymentData(
            applicationPrimaryAccountNumber: request.pan, applicationExpirationDate: request.expiry,
            currencyCode: request.currencyNumeric, transactionAmount: request.amount,
            deviceManufacturerIdentifier: "040010030273", paymentDataType: "3DSecure",
            paymentData: .init(onlinePaymentCryptogram: request.cryptogram, eciIndicator: request.eci),
            merchantTokenIdentifier: request.merchantToken?.identifier,
            merchantTokenMetadata: request.merchantToken.map { token in
                .init(cardArt: [], cardMetadata: .init(expirationDate: token.expirationDate, fpanSuffix: token.fpanSuffix))
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(payload))
    }
}

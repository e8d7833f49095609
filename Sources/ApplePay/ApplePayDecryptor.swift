import Crypto
import Foundation

/// Verifies and decrypts Apple Pay tokens (applepay-token.md §2–§4).
///
/// One instance is meant to be shared by all worker threads: it holds only the policy and the chain cache, so after
/// the first token from an Apple leaf each further token costs about one ECDSA verification plus one ECDH (EC_v1) or
/// one RSA decryption (RSA_v1).
public final class ApplePayDecryptor: Sendable {
    public let configuration: ApplePayVerifierConfiguration
    private let chainCache: ChainCache

    public init(configuration: ApplePayVerifierConfiguration = ApplePayVerifierConfiguration()) {
        self.configuration = configuration
        self.chainCache = ChainCache(capacity: configuration.chainCacheCapacity)
    }

    /// How many certificate sets the chain cache holds (diagnostics and tests).
    public var cachedChainCount: Int { chainCache.count }

    /// Verifies signature, chain and signing time only (for gateway-decrypts mode, where PayPipe passes the token on).
    ///
    /// - Parameter now: the verification clock (in the worker: the job's first-received time).
    /// - Returns: the CMS signing time.
    @discardableResult
    public func verify(_ token: ApplePayToken, now: Date) throws(ApplePayError) -> Date {
        let cms = try CMSSignedData.parse(token.signature)
        let signer = cms.signer
        guard signer.digestAlgorithm == .sha256 else { throw .signatureInvalid("CMS digest algorithm is not SHA-256") }
        let chain = try chainCache.chain(for: cms, trustRoot: configuration.trustRoot)
        guard signer.contentType == .pkcs7Data else { throw .signatureInvalid("contentType attribute missing or not id-data") }
        guard let signingTime = signer.signingTime else { throw .signatureInvalid("signingTime attribute missing") }
        let signedDigest = SHA256.hash(parts: [
            (token.wrappedKey ?? token.ephemeralPublicKey ?? [])[...], token.encryptedData[...], token.transactionIdBytes[...],
            (token.applicationData ?? [])[...],
        ])
        guard let messageDigest = signer.messageDigest, messageDigest.elementsEqual(signedDigest) else {
            throw .signatureInvalid("messageDigest does not match the token data")
        }
        // The scheme follows the leaf's key, never the token version (RSA_v1 tokens are signed by an RSA leaf).
        let algorithm = SignatureAlgorithm.for(chain.leafKey.type)
        let declared = signer.signatureAlgorithm
        let accepted =
            algorithm == .ecdsaSHA256
            ? declared == .ecdsaWithSHA256 : declared == .sha256WithRSAEncryption || declared == .rsaEncryption
        guard accepted else {
            throw .signatureInvalid("signer algorithm \(signer.signatureAlgorithm) does not fit the leaf's \(chain.leafKey.type) key")
        }
        guard chain.leafKey.verify(signature: signer.signature, digest: SHA256.hash(signer.signedAttributesForSignature), algorithm: algorithm) else {
            throw .signatureInvalid("signer signature does not verify")
        }
        guard chain.validFrom <= signingTime, signingTime <= chain.validUntil else {
            throw .certificateInvalid("certificate chain was not valid at the signing time")
        }
        let age = now.timeIntervalSince1970 - TimeInterval(signingTime.secondsSince1970)
        guard age <= configuration.signingTimeMaxAge else {
            throw .signingTimeOutOfRange("signing time is \(Int(age)) s before the verification clock (limit \(Int(configuration.signingTimeMaxAge)) s)")
        }
        guard -age <= configuration.signingTimeMaxFutureSkew else {
            throw .signingTimeOutOfRange("signing time is \(Int(-age)) s after the verification clock (limit \(Int(configuration.signingTimeMaxFutureSkew)) s)")
        }
        return signingTime.date
    }

    /// Verifies, then decrypts with the identity selected by `publicKeyHash`.
    public func decrypt(_ token: ApplePayToken, keyring: MerchantKeyring, now: Date) throws(ApplePayError) -> DecryptedPaymentData {
        try verify(token, now: now)
        guard let identity = keyring.identity(forPublicKeyHash: token.publicKeyHash) else {
            throw .unknownMerchantKey("no merchant identity matches the token's publicKeyHash")
        }
        let plaintext: [UInt8]
        switch token.version {
        case .ecV1: plaintext = try Self.decryptEC(token, identity: identity)
        case .rsaV1: plaintext = try Self.decryptRSA(token, identity: identity)
        }
        return try DecryptedPaymentData.decode(plaintext)
    }

    private static let zeroIV = [UInt8](repeating: 0, count: 16)
    private static let kdfAlgorithmAndPartyU: [UInt8] = [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8)

    /// §3: ECDH → NIST SP 800-56A concatenation KDF (one SHA-256 round) → AES-256-GCM.
    static func decryptEC(_ token: ApplePayToken, identity: MerchantIdentity) throws(ApplePayError) -> [UInt8] {
        guard identity.keyType == .ec else { throw .unknownMerchantKey("the matching merchant identity is not an EC key") }
        guard let spki = token.ephemeralPublicKey else { throw .malformedToken("header.ephemeralPublicKey missing") }
        let sharedSecret: [UInt8]
        do {
            sharedSecret = try identity.privateKey.sharedSecret(withP256UncompressedPoint: ephemeralPoint(spki))
        } catch .decodingFailed {
            throw .malformedToken("header.ephemeralPublicKey is not a valid P-256 public key")
        } catch {
            throw .decryptionFailed("ECDH key agreement failed")
        }
        return try open(token, key: derivedKey(sharedSecret: sharedSecret, merchantIdentifierHash: identity.merchantIdentifierHash))
    }

    /// `SHA256(00000001 || Z || 0x0D "id-aes256-GCM" || "Apple" || SHA256(merchantId))`: one round of the
    /// concatenation KDF yields the whole 32-byte AES-256 key. Public for the sandbox PKI (ApplePaySandbox), which
    /// encrypts tokens with the same key.
    public static func derivedKey(sharedSecret: [UInt8], merchantIdentifierHash: [UInt8]) -> [UInt8] {
        SHA256.hash(parts: [[0, 0, 0, 1], sharedSecret, kdfAlgorithmAndPartyU, merchantIdentifierHash])
    }

    /// §4: RSA-OAEP unwrap → AES-GCM with the unwrapped key's length.
    static func decryptRSA(_ token: ApplePayToken, identity: MerchantIdentity) throws(ApplePayError) -> [UInt8] {
        guard identity.keyType == .rsa else { throw .unknownMerchantKey("the matching merchant identity is not an RSA key") }
        guard let wrapped = token.wrappedKey else { throw .malformedToken("header.wrappedKey missing") }
        let key: [UInt8]
        do {
            key = try identity.privateKey.decryptOAEP(wrapped)
        } catch {
            throw .decryptionFailed("RSA-OAEP unwrap failed")
        }
        guard key.count == 16 || key.count == 32 else { throw .decryptionFailed("unwrapped key has an invalid length") }
        return try open(token, key: key)
    }

    private static func open(_ token: ApplePayToken, key: [UInt8]) throws(ApplePayError) -> [UInt8] {
        do {
            return try AESGCM.open(key: key, nonce: zeroIV, combined: token.encryptedData)
        } catch {
            throw .decryptionFailed("AES-GCM authentication failed")
        }
    }

    /// The DER prefix of every id-ecPublicKey/prime256v1 SubjectPublicKeyInfo with an uncompressed point
    /// (SEQUENCE { SEQUENCE { ecPublicKey, prime256v1 }, BIT STRING 00 04… }). DER is canonical, so this fixed
    /// prefix followed by the 65-byte point is the only valid encoding; checking it avoids a generic ASN.1 walk per token.
    private static let p256SPKIPrefix: [UInt8] = Hex.decode("3059301306072a8648ce3d020106082a8648ce3d030107034200")!

    /// The uncompressed point of an id-ecPublicKey/prime256v1 SubjectPublicKeyInfo; anything else is rejected.
    /// Whether the point is on the curve is checked when it is loaded for ECDH (`CryptoError.decodingFailed`).
    static func ephemeralPoint(_ spki: [UInt8]) throws(CryptoError) -> ArraySlice<UInt8> {
        guard spki.count == p256SPKIPrefix.count + 65, spki.starts(with: p256SPKIPrefix) else {
            throw .decodingFailed("not a P-256 SubjectPublicKeyInfo")
        }
        return spki[p256SPKIPrefix.count...]
    }
}

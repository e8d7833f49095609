import COpenSSL

/// An EC or RSA public key (OpenSSL `EVP_PKEY`), immutable and shareable across threads.
public final class PublicKey: Sendable {
    let key: EVPKey

    init(key: EVPKey) {
        self.key = key
    }

    /// Loads a DER SubjectPublicKeyInfo.
    public convenience init(subjectPublicKeyInfoDER der: [UInt8]) throws(CryptoError) {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let parsed else {
            OpenSSLErrorQueue.clear()
            throw .decodingFailed("SubjectPublicKeyInfo")
        }
        self.init(key: try EVPKey(taking: parsed))
    }

    /// Loads a PEM "PUBLIC KEY".
    public convenience init(pem: String) throws(CryptoError) {
        let bio = try MemoryBIO(bytes: Array(pem.utf8))
        guard let parsed = PEM_read_bio_PUBKEY(bio.pointer, nil, nil, nil) else {
            OpenSSLErrorQueue.clear()
            throw .decodingFailed("PEM public key")
        }
        self.init(key: try EVPKey(taking: parsed))
    }

    /// Builds a P-256 key from an uncompressed SEC1 point (0x04 || X || Y). OpenSSL rejects points not on the curve.
    ///
    /// Copies the group from a template key and sets the point, which costs a few microseconds, where
    /// `init(subjectPublicKeyInfoDER:)` (decoder lookup) costs ~200 µs and `EVP_PKEY_fromdata` (group built by
    /// name) ~30 µs. For a one-shot ECDH peer (an Apple Pay ephemeral key) `PrivateKey.sharedSecret(withP256UncompressedPoint:)`
    /// is cheaper still: it reuses a pooled peer key instead of allocating one and copying the group.
    public convenience init(p256UncompressedPoint point: ArraySlice<UInt8>) throws(CryptoError) {
        guard point.count == 65, point.first == 0x04 else { throw .decodingFailed("P-256 point must be 65 bytes, uncompressed") }
        guard let pkey = EVP_PKEY_new() else { throw OpenSSLErrorQueue.failure("EVP_PKEY_new") }
        let ok = EVP_PKEY_copy_parameters(pkey, Self.p256Template.key.pointer) == 1
            && point.withUnsafeBufferPointer { EVP_PKEY_set1_encoded_public_key(pkey, $0.baseAddress, $0.count) } == 1
        guard ok else {
            EVP_PKEY_free(pkey)
            OpenSSLErrorQueue.clear()
            throw .decodingFailed("P-256 public point")
        }
        self.init(key: try EVPKey(taking: pkey))
    }

    /// Source of the P-256 group parameters for `init(p256UncompressedPoint:)`.
    private static let p256Template: PrivateKey = {
        do {
            return try PrivateKey.generateP256()
        } catch {
            fatalError("cannot create a P-256 key: \(error)")
        }
    }()

    public var type: KeyType { key.type }
    public var bits: Int { key.bits }
    /// The OpenSSL curve name for EC keys ("prime256v1").
    public var curveName: String? { key.curveName }

    /// DER SubjectPublicKeyInfo (what Apple's `publicKeyHash` is the SHA-256 of).
    public func subjectPublicKeyInfoDER() throws(CryptoError) -> [UInt8] {
        try key.subjectPublicKeyInfoDER()
    }

    /// Verifies `signature` over a precomputed SHA-256 `digest`. Returns false for any invalid signature.
    public func verify(signature: some ContiguousBytesSource, digest: [UInt8], algorithm: SignatureAlgorithm) -> Bool {
        guard algorithm.keyType == key.type, digest.count == SHA256.digestLength else { return false }
        let verifyOnce = { (context: OpaquePointer) -> Int32 in
            signature.withBytes { raw in
                EVP_PKEY_verify(context, raw.bindMemory(to: UInt8.self).baseAddress, raw.count, digest, digest.count)
            }
        }
        let result: Int32?
        switch algorithm {
        case .ecdsaSHA256:
            // A bad signature leaves the context reusable (EVP_PKEY_verify has no state between calls).
            result = try? key.withPooledContext(.ecdsaVerify) { context throws(CryptoError) in verifyOnce(context) }
        case .rsaPKCS1SHA256:
            result = try? key.withContext("verify") { context throws(CryptoError) in
                guard EVP_PKEY_verify_init(context) == 1, EVPKey.configure(context, for: algorithm) else {
                    throw OpenSSLErrorQueue.failure("verify init")
                }
                return verifyOnce(context)
            }
        }
        if result != 1 { OpenSSLErrorQueue.clear() }
        return result == 1
    }

    /// Verifies `signature` over `message` (hashed with SHA-256 here).
    public func verify(signature: some ContiguousBytesSource, message: some ContiguousBytesSource, algorithm: SignatureAlgorithm) -> Bool {
        verify(signature: signature, digest: SHA256.hash(message), algorithm: algorithm)
    }

    /// RSA-OAEP (SHA-256, MGF1-SHA-256, empty label) encryption — the RSA_v1 key wrap.
    public func encryptOAEP(_ plaintext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.type == .rsa else { throw .invalidInput("RSA-OAEP needs an RSA key") }
        return try key.withContext("RSA-OAEP encrypt") { context throws(CryptoError) in
            guard EVP_PKEY_encrypt_init(context) == 1, EVPKey.configureOAEP(context) else {
                throw OpenSSLErrorQueue.failure("RSA-OAEP encrypt init")
            }
            var length = 0
            guard EVP_PKEY_encrypt(context, nil, &length, plaintext, plaintext.count) == 1 else {
                throw OpenSSLErrorQueue.failure("RSA-OAEP encrypt")
            }
            var output = [UInt8](repeating: 0, count: length)
            guard EVP_PKEY_encrypt(context, &output, &length, plaintext, plaintext.count) == 1 else {
                throw OpenSSLErrorQueue.failure("RSA-OAEP encrypt")
            }
            return Array(output.prefix(length))
        }
    }

    /// Whether both keys are the same public key (compared by SubjectPublicKeyInfo).
    public func matches(_ other: PublicKey) -> Bool {
        EVP_PKEY_eq(key.pointer, other.key.pointer) == 1
    }
}

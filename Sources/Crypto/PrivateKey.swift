import COpenSSL

/// An EC or RSA private key (OpenSSL `EVP_PKEY`), immutable and shareable across threads.
public final class PrivateKey: Sendable {
    let key: EVPKey

    private init(key: EVPKey) {
        self.key = key
    }

    /// Loads PEM "EC PRIVATE KEY", "RSA PRIVATE KEY" or unencrypted PKCS#8 "PRIVATE KEY".
    public convenience init(pem: String) throws(CryptoError) {
        let bio = try MemoryBIO(bytes: Array(pem.utf8))
        guard let parsed = PEM_read_bio_PrivateKey(bio.pointer, nil, nil, nil) else {
            OpenSSLErrorQueue.clear()
            throw .decodingFailed("PEM private key")
        }
        self.init(key: try EVPKey(taking: parsed))
    }

    /// A fresh P-256 key.
    public static func generateP256() throws(CryptoError) -> PrivateKey {
        try generate(algorithm: "EC") { EVP_PKEY_CTX_set_group_name($0, "P-256") == 1 }
    }

    /// A fresh RSA key with public exponent 65537.
    public static func generateRSA(bits: Int = 2048) throws(CryptoError) -> PrivateKey {
        try generate(algorithm: "RSA") { EVP_PKEY_CTX_set_rsa_keygen_bits($0, Int32(bits)) == 1 }
    }

    private static func generate(algorithm: String, configure: (OpaquePointer) -> Bool) throws(CryptoError) -> PrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil) else { throw OpenSSLErrorQueue.failure("keygen") }
        defer { EVP_PKEY_CTX_free(context) }
        var result: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1, configure(context), EVP_PKEY_generate(context, &result) == 1,
            let result
        else { throw OpenSSLErrorQueue.failure("\(algorithm) key generation") }
        return PrivateKey(key: try EVPKey(taking: result))
    }

    public var type: KeyType { key.type }
    public var bits: Int { key.bits }
    public var curveName: String? { key.curveName }

    /// The matching public key (shares the same `EVP_PKEY`; only public operations are offered through it).
    public var publicKey: PublicKey { PublicKey(key: key) }

    /// Unencrypted PKCS#8 PEM. The caller is responsible for storing it with restrictive permissions.
    public func pkcs8PEM() throws(CryptoError) -> String {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PrivateKey(bio.pointer, key.pointer, nil, nil, 0, nil, nil) == 1 else {
            throw OpenSSLErrorQueue.failure("PEM_write_bio_PrivateKey")
        }
        return String(decoding: bio.readAll(), as: UTF8.self)
    }

    /// Signs SHA-256(`message`).
    public func sign(message: some ContiguousBytesSource, algorithm: SignatureAlgorithm) throws(CryptoError) -> [UInt8] {
        try sign(digest: SHA256.hash(message), algorithm: algorithm)
    }

    /// Signs a precomputed SHA-256 digest.
    public func sign(digest: [UInt8], algorithm: SignatureAlgorithm) throws(CryptoError) -> [UInt8] {
        guard algorithm.keyType == key.type else { throw .invalidInput("\(algorithm) needs a \(algorithm.keyType) key") }
        guard digest.count == SHA256.digestLength else { throw .invalidInput("digest must be 32 bytes") }
        return try key.withContext("sign") { context throws(CryptoError) in
            guard EVP_PKEY_sign_init(context) == 1, EVPKey.configure(context, for: algorithm) else {
                throw OpenSSLErrorQueue.failure("sign init")
            }
            var length = 0
            guard EVP_PKEY_sign(context, nil, &length, digest, digest.count) == 1 else { throw OpenSSLErrorQueue.failure("sign") }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_PKEY_sign(context, &signature, &length, digest, digest.count) == 1 else { throw OpenSSLErrorQueue.failure("sign") }
            return Array(signature.prefix(length))
        }
    }

    /// ECDH: the X coordinate of the shared point, always exactly the field size (32 bytes for P-256).
    ///
    /// Leading zero bytes are kept (left-padded if a provider ever returned a short value): dropping them breaks
    /// about one token in 256.
    ///
    /// The peer is not re-validated here (`EVP_PKEY_derive_set_peer_ex(…, 0)`): every `PublicKey` constructor
    /// decodes its point with `EC_POINT_oct2point`, which rejects points off the curve, and on prime-order curves
    /// such as P-256 (cofactor 1) that is the complete check. The default full validation repeats a scalar
    /// multiplication and would make ECDH ~2× slower.
    public func sharedSecret(with peer: PublicKey) throws(CryptoError) -> [UInt8] {
        guard key.type == .ec, peer.type == .ec else { throw .invalidInput("ECDH needs EC keys") }
        return try key.withPooledContext(.ecdhDerive) { context throws(CryptoError) in
            try derive(context, peer: peer.key.pointer)
        }
    }

    /// ECDH with a peer given as an uncompressed SEC1 P-256 point (0x04 || X || Y); the same result as
    /// `sharedSecret(with: PublicKey(p256UncompressedPoint: point))`, for a P-256 private key only.
    ///
    /// For one-shot peers (every Apple Pay token carries a fresh ephemeral key): the point is loaded into a peer key
    /// pooled with the derive context, so no `EVP_PKEY` is allocated and no group is copied per call (together ~3%
    /// of a token). Loading the point runs the same `EC_POINT_oct2point` as the `PublicKey` constructor, which
    /// rejects points that are not on the curve; on P-256 (cofactor 1) that is the complete peer validation.
    ///
    /// - Throws: `CryptoError.decodingFailed` when `point` is not a valid P-256 point; other errors for a non-P-256
    ///   key or an OpenSSL failure.
    public func sharedSecret(withP256UncompressedPoint point: ArraySlice<UInt8>) throws(CryptoError) -> [UInt8] {
        guard key.type == .ec else { throw .invalidInput("ECDH needs EC keys") }
        guard point.count == 65, point.first == 0x04 else { throw .decodingFailed("P-256 point must be 65 bytes, uncompressed") }
        return try key.withPooledSession(.ecdhDeriveWithPoint) { session throws(CryptoError) in
            // A failed load may leave the peer half-updated: throwing discards the whole pooled session.
            guard let peer = session.peer,
                point.withUnsafeBufferPointer({ EVP_PKEY_set1_encoded_public_key(peer, $0.baseAddress, $0.count) }) == 1
            else {
                OpenSSLErrorQueue.clear()
                throw .decodingFailed("P-256 public point")
            }
            return try derive(session.pointer, peer: peer)
        }
    }

    /// Sets `peer` on an initialised derive context (without the full public-key check, see `sharedSecret(with:)`)
    /// and derives the field-size secret.
    private func derive(_ context: OpaquePointer, peer: OpaquePointer) throws(CryptoError) -> [UInt8] {
        guard EVP_PKEY_derive_set_peer_ex(context, peer, 0) == 1 else {
            throw OpenSSLErrorQueue.failure("ECDH peer")
        }
        let fieldLength = (key.bits + 7) / 8
        var length = fieldLength
        var secret = [UInt8](repeating: 0, count: fieldLength)
        guard EVP_PKEY_derive(context, &secret, &length) == 1, length <= fieldLength else {
            throw OpenSSLErrorQueue.failure("ECDH derive")
        }
        if length < fieldLength {
            secret = [UInt8](repeating: 0, count: fieldLength - length) + secret.prefix(length)
        }
        return secret
    }

    /// RSA-OAEP (SHA-256, MGF1-SHA-256, empty label) decryption — the RSA_v1 key unwrap.
    public func decryptOAEP(_ ciphertext: some ContiguousBytesSource) throws(CryptoError) -> [UInt8] {
        guard key.type == .rsa else { throw .invalidInput("RSA-OAEP needs an RSA key") }
        return try key.withContext("RSA-OAEP decrypt") { context throws(CryptoError) in
            guard EVP_PKEY_decrypt_init(context) == 1, EVPKey.configureOAEP(context) else {
                throw OpenSSLErrorQueue.failure("RSA-OAEP decrypt init")
            }
            var length = (key.bits + 7) / 8
            var output = [UInt8](repeating: 0, count: length)
            let ok = ciphertext.withBytes { raw in
                EVP_PKEY_decrypt(context, &output, &length, raw.bindMemory(to: UInt8.self).baseAddress, raw.count) == 1
            }
            guard ok else {
                // Do not distinguish padding failures in the message (Bleichenbacher/Manger-style oracles).
                OpenSSLErrorQueue.clear()
                throw CryptoError.authenticationFailed
            }
            return Array(output.prefix(length))
        }
    }
}

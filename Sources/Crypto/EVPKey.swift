import COpenSSL
import Synchronization

/// Owner of one `EVP_PKEY` reference, shared by `PublicKey` and `PrivateKey`.
///
/// `@unchecked Sendable` because the key is never mutated after construction and OpenSSL 3 supports concurrent
/// read-only use of one `EVP_PKEY` from many threads: every operation here creates its own `EVP_PKEY_CTX`/`EVP_MD_CTX`
/// (see openssl-threads(7), "Objects": EVP_PKEY is safe once fully set up). The reference is freed on deinit.
/// The context pools are behind a `Mutex`; a pooled context is used by one thread at a time.
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer
    let type: KeyType
    /// Key size in bits (256 for P-256, the modulus size for RSA).
    let bits: Int
    /// Initialised ECDSA-verify and ECDH-derive contexts, reused across operations: creating and initialising a
    /// context fetches the algorithm from the provider each time (~3–6 µs, several percent of a token).
    private let verifyContexts = Mutex<[PooledContext]>([])
    private let deriveContexts = Mutex<[PooledContext]>([])
    private let pointDeriveContexts = Mutex<[PooledContext]>([])
    private static let poolLimit = 16

    /// An idle `EVP_PKEY_CTX` owned by a pool, for `.ecdhDeriveWithPoint` together with the peer `EVP_PKEY` it
    /// reuses. `@unchecked Sendable`: a context (and its peer) is only ever touched by the one thread that took it out
    /// of the pool (under the pool's lock) until it puts it back.
    struct PooledContext: @unchecked Sendable {
        let pointer: OpaquePointer
        /// `.ecdhDeriveWithPoint` only: a key with this key's group, whose public point is replaced per operation.
        let peer: OpaquePointer?

        func free() {
            EVP_PKEY_CTX_free(pointer)
            if let peer { EVP_PKEY_free(peer) }
        }
    }

    /// Takes ownership of `pointer`.
    init(taking pointer: OpaquePointer) throws(CryptoError) {
        self.pointer = pointer
        self.bits = Int(EVP_PKEY_get_bits(pointer))
        switch EVP_PKEY_get_base_id(pointer) {
        case EVP_PKEY_EC: self.type = .ec
        case EVP_PKEY_RSA: self.type = .rsa
        default:
            EVP_PKEY_free(pointer)
            throw .invalidInput("unsupported key type (only EC and RSA keys are supported)")
        }
    }

    deinit {
        verifyContexts.withLock { $0.forEach { $0.free() } }
        deriveContexts.withLock { $0.forEach { $0.free() } }
        pointDeriveContexts.withLock { $0.forEach { $0.free() } }
        EVP_PKEY_free(pointer)
    }

    enum PooledOperation {
        case ecdsaVerify
        case ecdhDerive
        /// ECDH with a peer given as an encoded point: the context comes with a reusable peer key
        /// (`PooledContext.peer`), so a fresh peer costs no `EVP_PKEY` allocation nor group copy.
        case ecdhDeriveWithPoint
    }

    private func withPool<R: Sendable>(_ operation: PooledOperation, _ body: (inout [PooledContext]) -> R) -> R {
        switch operation {
        case .ecdsaVerify: verifyContexts.withLock { body(&$0) }
        case .ecdhDerive: deriveContexts.withLock { body(&$0) }
        case .ecdhDeriveWithPoint: pointDeriveContexts.withLock { body(&$0) }
        }
    }

    /// Runs `body` with an initialised context from the pool for `operation` (creating one if the pool is empty)
    /// and returns the context afterwards, unless `body` failed (a context in an unknown state is freed instead).
    func withPooledContext<R>(
        _ operation: PooledOperation, _ body: (OpaquePointer) throws(CryptoError) -> R
    ) throws(CryptoError) -> R {
        try withPooledSession(operation) { (session: PooledContext) throws(CryptoError) -> R in try body(session.pointer) }
    }

    /// Like `withPooledContext`, with the whole pooled entry (for `.ecdhDeriveWithPoint`, its peer key).
    func withPooledSession<R>(
        _ operation: PooledOperation, _ body: (PooledContext) throws(CryptoError) -> R
    ) throws(CryptoError) -> R {
        let session: PooledContext
        if let pooled = withPool(operation, { $0.popLast() }) {
            session = pooled
        } else {
            session = try makeSession(operation)
        }
        let result: R
        do {
            result = try body(session)
        } catch {
            session.free()
            throw error
        }
        let kept = withPool(operation) { contexts in
            guard contexts.count < Self.poolLimit else { return false }
            contexts.append(session)
            return true
        }
        if !kept { session.free() }
        return result
    }

    private func makeSession(_ operation: PooledOperation) throws(CryptoError) -> PooledContext {
        guard let fresh = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else { throw OpenSSLErrorQueue.failure("EVP_PKEY_CTX_new") }
        let initialised = operation == .ecdsaVerify ? EVP_PKEY_verify_init(fresh) == 1 : EVP_PKEY_derive_init(fresh) == 1
        guard initialised else {
            EVP_PKEY_CTX_free(fresh)
            throw OpenSSLErrorQueue.failure(operation == .ecdsaVerify ? "verify init" : "derive init")
        }
        guard operation == .ecdhDeriveWithPoint else { return PooledContext(pointer: fresh, peer: nil) }
        // Checked here, once per pooled context, instead of per operation (a parameter lookup by name).
        guard curveName == "prime256v1" else {
            EVP_PKEY_CTX_free(fresh)
            throw .invalidInput("ECDH with a P-256 point needs a P-256 key")
        }
        // Domain parameters only (EVP_PKEY_copy_parameters never copies key material).
        guard let peer = EVP_PKEY_new() else {
            EVP_PKEY_CTX_free(fresh)
            throw OpenSSLErrorQueue.failure("EVP_PKEY_new")
        }
        guard EVP_PKEY_copy_parameters(peer, pointer) == 1 else {
            EVP_PKEY_CTX_free(fresh)
            EVP_PKEY_free(peer)
            throw OpenSSLErrorQueue.failure("EVP_PKEY_copy_parameters")
        }
        return PooledContext(pointer: fresh, peer: peer)
    }

    /// The curve name of an EC key ("prime256v1"), nil for RSA.
    var curveName: String? {
        guard type == .ec else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(pointer, OSSL_PKEY_PARAM_GROUP_NAME, &buffer, buffer.count, &length) == 1 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// DER SubjectPublicKeyInfo.
    func subjectPublicKeyInfoDER() throws(CryptoError) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(pointer, &out)
        guard length > 0, let out else { throw OpenSSLErrorQueue.failure("i2d_PUBKEY") }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// Runs an `EVP_PKEY_CTX` operation on a fresh context for this key.
    func withContext<R>(
        _ operation: String, _ body: (OpaquePointer) throws(CryptoError) -> R
    ) throws(CryptoError) -> R {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else {
            throw OpenSSLErrorQueue.failure(operation)
        }
        defer { EVP_PKEY_CTX_free(context) }
        return try body(context)
    }

    /// Applies the padding/digest settings of a signature scheme to a verify or sign context.
    ///
    /// ECDSA signs the digest as given, so no digest is set (fetching it by name would add ~15 µs per verification);
    /// RSA PKCS#1 v1.5 needs it to build the DigestInfo.
    static func configure(_ context: OpaquePointer, for algorithm: SignatureAlgorithm) -> Bool {
        switch algorithm {
        case .ecdsaSHA256:
            return true
        case .rsaPKCS1SHA256:
            return EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1
                && EVP_PKEY_CTX_set_signature_md(context, EVP_sha256()) == 1
        }
    }

    /// Applies RSA-OAEP with SHA-256 and MGF1-SHA-256 (Apple Pay RSA_v1) to an encrypt or decrypt context.
    static func configureOAEP(_ context: OpaquePointer) -> Bool {
        EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_OAEP_PADDING) == 1
            && EVP_PKEY_CTX_set_rsa_oaep_md(context, EVP_sha256()) == 1
            && EVP_PKEY_CTX_set_rsa_mgf1_md(context, EVP_sha256()) == 1
    }
}

import COpenSSL

/// AES-GCM (128/192/256-bit keys) with any IV length and a 16-byte tag, via EVP.
///
/// Apple Pay uses a 16-byte all-zero IV (GHASH-derived J0) with single-use keys; data at rest uses 12-byte random
/// nonces (`randomNonce()`). Both go through the same code path: OpenSSL handles non-96-bit IVs when the IV length
/// is set before the key/IV are installed.
public enum AESGCM {
    public static let tagLength = 16
    public static let nonceLength = 12

    /// A fresh 12-byte random nonce.
    public static func randomNonce() -> [UInt8] {
        SecureRandom.bytes(count: nonceLength)
    }

    /// Encrypts `plaintext`; returns the ciphertext (same length) and the 16-byte tag.
    public static func seal(
        key: [UInt8], nonce: [UInt8], plaintext: some ContiguousBytesSource, aad: [UInt8] = []
    ) throws(CryptoError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        let context = try AESGCMContext(key: key, nonce: nonce, encrypt: true)
        try context.addAAD(aad)
        let ciphertext = try context.update(plaintext)
        try context.finish()
        return (ciphertext, try context.tag())
    }

    /// Decrypts and authenticates; throws `CryptoError.authenticationFailed` when the tag does not match.
    public static func open(
        key: [UInt8], nonce: [UInt8], ciphertext: some ContiguousBytesSource, tag: some ContiguousBytesSource,
        aad: [UInt8] = []
    ) throws(CryptoError) -> [UInt8] {
        guard tag.withBytes({ $0.count }) == tagLength else { throw .invalidInput("GCM tag must be \(tagLength) bytes") }
        let context = try AESGCMContext(key: key, nonce: nonce, encrypt: false)
        try context.addAAD(aad)
        let plaintext = try context.update(ciphertext)
        try context.setExpectedTag(tag)
        do {
            try context.finish()
        } catch {
            OpenSSLErrorQueue.clear()
            throw .authenticationFailed
        }
        return plaintext
    }

    /// Convenience for the common `ciphertext || tag` layout (Apple Pay's `data`).
    public static func open(
        key: [UInt8], nonce: [UInt8], combined: [UInt8], aad: [UInt8] = []
    ) throws(CryptoError) -> [UInt8] {
        guard combined.count >= tagLength else { throw .authenticationFailed }
        let split = combined.count - tagLength
        return try open(key: key, nonce: nonce, ciphertext: combined[..<split], tag: combined[split...], aad: aad)
    }
}

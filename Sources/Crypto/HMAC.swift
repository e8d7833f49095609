import COpenSSL

// HMACAlgorithm and HMAC share this file on purpose: the HTTP/JWT helper may add only this one file to Crypto.

/// Hash functions usable with `HMAC`. Mirrors JWS's HS256/HS384/HS512 (RFC 7518 §3.2).
public enum HMACAlgorithm: Sendable, Hashable, CaseIterable {
    case sha256
    case sha384
    case sha512

    /// Bytes in an authentication code: 32, 48 or 64.
    public var outputLength: Int {
        switch self {
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    /// OpenSSL's built-in digest; these are static objects that never need freeing.
    fileprivate var digest: OpaquePointer {
        switch self {
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        case .sha512: EVP_sha512()
        }
    }
}

/// HMAC (RFC 2104) over OpenSSL, plus the constant-time comparison that verifying one requires.
public enum HMAC {
    /// The full-length authentication code of `message` under `key`. Any key length is valid (longer than the
    /// hash block size is hashed first, per RFC 2104); an empty key is allowed but never sensible.
    public static func authenticationCode(_ algorithm: HMACAlgorithm, key: [UInt8], message: [UInt8]) -> [UInt8] {
        precondition(key.count <= Int(Int32.max), "HMAC key longer than 2 GiB")
        var code = [UInt8](repeating: 0, count: algorithm.outputLength)
        var length: UInt32 = 0
        // OpenSSL 3 treats a NULL key as "no key set" and fails, so an empty key still gets a valid pointer.
        let keyStorage = key.isEmpty ? [0] : key
        let produced = keyStorage.withUnsafeBufferPointer { keyBuffer in
            message.withUnsafeBufferPointer { messageBuffer in
                code.withUnsafeMutableBufferPointer { output in
                    COpenSSL.HMAC(
                        algorithm.digest, keyBuffer.baseAddress, Int32(key.count),
                        messageBuffer.baseAddress, messageBuffer.count, output.baseAddress, &length) != nil
                }
            }
        }
        // HMAC over memory with a built-in digest fails only if OpenSSL cannot allocate: no sensible recovery.
        precondition(produced && Int(length) == algorithm.outputLength, "OpenSSL HMAC failed")
        return code
    }

    /// Compares two byte strings in time that depends only on their length (CRYPTO_memcmp), so an attacker probing
    /// signatures learns nothing from timing. Lengths are public (the algorithm fixes them), so differing lengths
    /// return `false` immediately.
    public static func isEqualConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { left in
            b.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, a.count) == 0 }
        }
    }
}

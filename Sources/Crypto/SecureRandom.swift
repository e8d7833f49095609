import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    public static func bytes(count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        // RAND_bytes fails only if the DRBG cannot be seeded; continuing without randomness would be worse than stopping.
        precondition(RAND_bytes(&bytes, Int32(count)) == 1, "RAND_bytes failed: \(OpenSSLErrorQueue.drain())")
        return bytes
    }
}

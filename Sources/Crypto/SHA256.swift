import COpenSSL

/// SHA-256 through OpenSSL's EVP digest API.
public enum SHA256 {
    public static let digestLength = 32

    /// The digest of `bytes`.
    public static func hash(_ bytes: some ContiguousBytesSource) -> [UInt8] {
        hash(parts: [bytes])
    }

    /// The digest of the concatenation of `parts`, without building the concatenation.
    public static func hash(parts: [some ContiguousBytesSource]) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        defer { EVP_MD_CTX_free(context) }
        var digest = [UInt8](repeating: 0, count: digestLength)
        var ok = EVP_DigestInit_ex(context, FetchedAlgorithms.shared.sha256, nil) == 1
        for part in parts where ok {
            ok = part.withBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) } == 1
        }
        var length: UInt32 = 0
        ok = ok && EVP_DigestFinal_ex(context, &digest, &length) == 1
        // SHA-256 over memory only fails on allocation failure inside OpenSSL; there is no sensible recovery.
        precondition(ok && length == digestLength, "SHA-256 failed: \(OpenSSLErrorQueue.drain())")
        return digest
    }
}

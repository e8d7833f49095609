import COpenSSL

/// Algorithm implementations fetched from the default provider once per process.
///
/// `EVP_sha256()`/`EVP_aes_256_gcm()` trigger an implicit fetch (name lookup under a lock) on every init; holding
/// explicitly fetched objects avoids that on the per-token path. `@unchecked Sendable`: fetched `EVP_MD`/`EVP_CIPHER`
/// objects are immutable, reference-counted and documented as shareable between threads; they are never freed
/// (process lifetime).
final class FetchedAlgorithms: @unchecked Sendable {
    let sha256: OpaquePointer
    let aes128GCM: OpaquePointer
    let aes192GCM: OpaquePointer
    let aes256GCM: OpaquePointer

    static let shared = FetchedAlgorithms()

    private init() {
        guard let sha256 = EVP_MD_fetch(nil, "SHA2-256", nil), let aes128 = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil),
            let aes192 = EVP_CIPHER_fetch(nil, "AES-192-GCM", nil), let aes256 = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)
        else {
            // The default provider lacks SHA-256/AES-GCM only in a broken OpenSSL installation.
            fatalError("OpenSSL default provider is missing SHA-256 or AES-GCM: \(OpenSSLErrorQueue.drain())")
        }
        self.sha256 = sha256
        self.aes128GCM = aes128
        self.aes192GCM = aes192
        self.aes256GCM = aes256
    }
}

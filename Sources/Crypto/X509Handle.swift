import COpenSSL

/// Owner of one `X509*`.
///
/// `@unchecked Sendable` because the certificate is never modified after parsing and is only read (encoding,
/// extension lookup, signature check, use as a verification input) afterwards, which OpenSSL 3 allows concurrently.
final class X509Handle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { X509_free(pointer) }
}

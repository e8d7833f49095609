import COpenSSL

/// Reads and clears OpenSSL's thread-local error queue.
///
/// Every failing call leaves entries behind; draining them right away keeps later, unrelated failures on the same
/// thread from reporting stale reasons.
enum OpenSSLErrorQueue {
    /// The reason of the earliest queued error (the root cause), or `fallback` when the queue is empty.
    static func drain(fallback: String = "unknown OpenSSL error") -> String {
        var first: UInt = 0
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if first == 0 { first = code }
        }
        guard first != 0 else { return fallback }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(first, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Builds a `CryptoError.operationFailed` from the queue.
    static func failure(_ operation: String) -> CryptoError {
        .operationFailed(operation: operation, reason: drain())
    }

    /// Discards queued errors (after an expected failure such as a bad signature).
    static func clear() {
        ERR_clear_error()
    }
}
